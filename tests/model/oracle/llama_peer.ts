/**
 * llama.cpp as a benchmark's peer, kept running beside the benchmark (`llama_peer.mjs` under Node, one thread
 * and a second context on two, warmed up), so that the peer's figures are taken between ours in the same run
 * — each of our samples next to one of its — rather than once before them. Needs Node ≥ 20 and node-llama-cpp (installed by `prepare`
 * into `.cache/llama_oracle`); without them `startLlamaPeer` says why. The peer never keeps the calling
 * process alive: it exits when that process closes its input (at `close` or at exit).
 *
 * @example
 * ```ts
 * import { startLlamaPeer } from "./llama_peer.ts";
 * const peer = await startLlamaPeer(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
 * if (peer.peer !== null) {
 *   const prompt = await peer.peer.prompt(); // seconds for the 64-token prompt
 *   const generate = await peer.peer.generate(16); // seconds for 16 greedy tokens
 *   await peer.peer.close();
 * }
 * ```
 */
import { DIR, prepare } from "./oracle.ts";

/** What the peer reports once it is loaded and warmed up. */
export interface LlamaPeerInfo {
  readonly runtime: string;
  readonly cpu_variant: string; // the ggml CPU build node-llama-cpp chose for this CPU
  readonly prompt_tokens: number;
  readonly threads: number;
  readonly contextSize: number;
  readonly batchSize: number;
  readonly flashAttention: boolean;
}

/** A running peer: each call takes one sample (seconds) now. */
export interface LlamaPeer {
  readonly info: LlamaPeerInfo;
  /** Seconds for one prefill of the probes' prompt (`info.prompt_tokens` tokens). */
  prompt(): Promise<number>;
  /** Seconds for `n` greedy tokens after that prompt (the prompt not timed), on 1 (default) or 2 threads. */
  generate(n: number, threads?: 1 | 2): Promise<number>;
  close(): Promise<void>;
}

/** Starts the peer on `modelPath` and waits until it is warmed up, or returns why it cannot run. */
export async function startLlamaPeer(
  modelPath: string,
): Promise<{ peer: LlamaPeer; reason: null } | { peer: null; reason: string }> {
  const ready = await prepare();
  if (ready.inputs === null) return { peer: null, reason: ready.reason };
  const script = await Deno.readFile(
    new URL("./llama_peer.mjs", import.meta.url),
  );
  await Deno.writeFile(`${DIR}/llama_peer.mjs`, script);
  const child = new Deno.Command("node", {
    args: ["llama_peer.mjs", modelPath, "probes.json"],
    cwd: DIR,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  // Never keeps the caller alive between samples (it is unref'd then: its stdin closes when we exit, and it
  // exits then), but does while an answer is awaited (an unref'd child's output is not awaited otherwise).
  child.unref();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  const stdin = child.stdin.getWriter();
  const next = async (): Promise<Record<string, unknown>> => { // the next line the peer prints, parsed
    while (!pending.includes("\n")) {
      child.ref();
      const { value, done } = await lines.read().finally(() => child.unref());
      if (done) {
        throw new Error(
          "Cannot read the llama.cpp peer: it exited (its error is above)",
        );
      }
      pending += value;
    }
    const end = pending.indexOf("\n"), line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    return JSON.parse(line);
  };
  let info: LlamaPeerInfo;
  try {
    info = (await next()).ready as LlamaPeerInfo;
  } catch (e) {
    await stdin.close().catch(() => {});
    await child.status;
    return {
      peer: null,
      reason: `llama.cpp peer failed to start: ${(e as Error).message}`,
    };
  }
  const ask = async (line: string): Promise<number> => {
    await stdin.write(new TextEncoder().encode(line + "\n"));
    const answer = await next();
    if (typeof answer.seconds !== "number") {
      throw new Error(
        `Cannot take a llama.cpp sample: answer is ${JSON.stringify(answer)}`,
      );
    }
    return answer.seconds;
  };
  return {
    reason: null,
    peer: {
      info,
      prompt: () => ask("prompt"),
      generate: (n, threads = 1) => ask(threads === 1 ? `generate ${n}` : `generate ${n} ${threads}`),
      async close() {
        await stdin.write(new TextEncoder().encode("quit\n")).catch(() => {});
        await stdin.close().catch(() => {});
        await lines.cancel().catch(() => {});
        await child.status;
      },
    },
  };
}
