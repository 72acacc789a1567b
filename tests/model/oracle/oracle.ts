/**
 * The llama.cpp reference for the SmolLM2 tests: installs `node-llama-cpp@3.21.1` (it ships native prebuilt
 * binaries, so it runs under Node, not Deno) into the git-ignored `.cache/llama_oracle/`, runs
 * `llama_oracle.mjs` on the GGUF and `probes.json`, and caches the output by the hash of its inputs.
 * Slow-only: without NEURO_SLOW, Node or the registry it returns the reason instead, and tests mark themselves
 * ignored.
 */
import { sha256Hex } from "../../../core/digest.ts";
import { readGguf } from "../../../kernels/gguf.ts";
import { ROOT, SLOW } from "../smollm2_file.ts";
import { writeF32Gguf } from "./f32_gguf.ts";
import { PROBES as CONFORMANCE_PROBES } from "../../text/_multilingual.ts";

/** What `llama_oracle.mjs` writes (see that file). */
export interface LlamaReference {
  runtime: string;
  threads: number;
  kv_cache: string;
  probes: { text: string; ids: number[] }[];
  chat: { text: string; ids: number[] };
  hello_world: number[];
  prompt: number[];
  positions: { argmax: number; top: [number, number][] }[];
  answer: { ids: number[]; text: string; first_top: [number, number][] };
  timing: Record<string, number>;
  throughput: {
    prompt_tokens_per_second: number;
    generate_tokens_per_second: number;
  };
}

const HERE = new URL("./", import.meta.url).pathname;
/** Where node-llama-cpp is installed and the oracle's scripts run (git-ignored). */
export const DIR = `${ROOT}.cache/llama_oracle`;

async function run(
  cmd: string,
  args: string[],
  cwd: string,
): Promise<{ ok: boolean; text: string }> {
  try {
    const out = await new Deno.Command(cmd, {
      args,
      cwd,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const d = new TextDecoder();
    return {
      ok: out.success,
      text: (d.decode(out.stdout) + d.decode(out.stderr)).trim(),
    };
  } catch (e) {
    return {
      ok: false,
      text: `${cmd} could not be started: ${e instanceof Error ? e.message : String(e)}`,
    };
  }
}

/**
 * Checks Node, copies the oracle files to `.cache/llama_oracle/` and installs node-llama-cpp when needed;
 * returns the bytes of the reference's inputs (its cache key) or why llama.cpp cannot run here.
 */
export async function prepare(): Promise<
  { inputs: Uint8Array[]; reason: null } | { inputs: null; reason: string }
> {
  const node = await run("node", ["--version"], HERE);
  if (!node.ok || Number(node.text.replace(/^v/, "").split(".")[0]) < 20) {
    return {
      inputs: null,
      reason: `node >= 20 is needed for node-llama-cpp (${node.text})`,
    };
  }
  await Deno.mkdir(DIR, { recursive: true });
  const inputs: Uint8Array[] = [];
  for (const f of ["package.json", "llama_oracle.mjs"]) {
    const bytes = await Deno.readFile(HERE + f);
    inputs.push(bytes);
    await Deno.writeFile(`${DIR}/${f}`, bytes);
  }
  // probes.json as the oracle sees it: our probes followed by the text suite's eight conformance probes.
  const probes = new TextEncoder().encode(JSON.stringify(PROBES));
  inputs.push(probes);
  await Deno.writeFile(`${DIR}/probes.json`, probes);
  const installed = await Deno.readTextFile(
    `${DIR}/node_modules/node-llama-cpp/package.json`,
  )
    .then((t) => JSON.parse(t).version as string, () => null);
  if (installed !== "3.21.1") {
    const npm = await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
    ], DIR);
    if (!npm.ok) {
      const tail = npm.text.split("\n").slice(-3).join(" | ");
      return {
        inputs: null,
        reason: `npm install node-llama-cpp@3.21.1 failed: ${tail}`,
      };
    }
  }
  return { inputs, reason: null };
}

/** The reference outputs and the per-position log-probabilities ([positions, V]), or why they are missing. */
export async function llamaReference(
  modelPath: string | null,
): Promise<
  { ref: LlamaReference; logprobs: Float32Array; reason: null } | {
    ref: null;
    logprobs: null;
    reason: string;
  }
> {
  const skip = (reason: string) => {
    console.warn(`ignored: ${reason}`);
    return { ref: null, logprobs: null, reason } as const;
  };
  if (!SLOW) {
    return {
      ref: null,
      logprobs: null,
      reason: "set NEURO_SLOW=1 to compare against llama.cpp",
    };
  }
  if (modelPath === null) return skip("the SmolLM2 file is not available");
  const ready = await prepare();
  if (ready.inputs === null) return skip(ready.reason);
  const head = await Deno.stat(modelPath);
  const key = sha256Hex(new TextEncoder().encode(
    ready.inputs.map((b) => sha256Hex(b)).join(",") +
      `,${modelPath},${head.size},${head.mtime?.getTime()}`,
  )).slice(0, 16);
  const out = `${DIR}/reference-${key}.json`;
  if (!await Deno.stat(out).then(() => true, () => false)) {
    const r = await run("node", [
      "llama_oracle.mjs",
      modelPath,
      "probes.json",
      out,
    ], DIR);
    if (!r.ok) {
      return skip(
        `llama.cpp reference run failed: ${r.text.split("\n").slice(-5).join(" | ")}`,
      );
    }
  }
  const ref = JSON.parse(await Deno.readTextFile(out)) as LlamaReference;
  const raw = await Deno.readFile(`${out}.logprobs.f32`);
  return {
    ref,
    logprobs: new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4),
    reason: null,
  };
}

/** The probes the reference is computed on: probes.json, with the text suite's eight conformance probes appended. */
export const PROBES = await (async () => {
  const own = JSON.parse(await Deno.readTextFile(HERE + "probes.json")) as {
    probes: string[];
    chat: string;
    logits_text: string;
    logits_tokens: number;
    generate_tokens: number;
  };
  return { ...own, probes: [...own.probes, ...Object.values(CONFORMANCE_PROBES)] };
})();

/** The F32 copy of a GGUF file next to it (`….F32.gguf`), written once; null when there is no source. */
export async function f32Copy(path: string | null): Promise<string | null> {
  if (path === null) return null;
  const target = path.replace(/\.[^./]+\.gguf$/, ".F32.gguf");
  if (target === path) throw new Error(`Cannot name the F32 copy of ${path}`);
  const exists = await Deno.stat(target).then((s) => s.size > 0, () => false);
  if (!exists) await writeF32Gguf(readGguf(await Deno.readFile(path)), target);
  return target;
}
