/**
 * Paid inference on the devnet model (PROTOCOL §8). Group `provider answer`: the provider's whole answer to
 * an 8-token request (greedy generation, then the generation record from one prefill, split by partition)
 * against plain greedy generation of the same 8 tokens — the ratio is what committing a verifiable record
 * costs; tokens/s of the provider is 8 ÷ the answer's time. Group `respond on the ledger`: the graph checks
 * every validator runs on a response (no neural work) against the head referee a dispute runs.
 *
 * With `NEURO_BENCH_FULL=1`, `end to end` also runs one paid 8-token answer on a real network (a validator and
 * a provider process on 127.0.0.1, `deno task infer`'s code in-process) and prints its latency split: infer
 * accepted → response accepted → settled, the provider's compute and the rest spent waiting on blocks.
 * Run: `deno bench --allow-all bench/inference_bench.ts`.
 */
import type { JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { ObjectStore } from "../core/object_store.ts";
import { PRESETS } from "../kernels/config.ts";
import { generate } from "../kernels/generation.ts";
import { checkGeneration } from "../kernels/generation_check.ts";
import { generationRecord } from "../kernels/generation_record.ts";
import { generationNeeded, replayGeneration } from "../kernels/generation_referee.ts";
import { buildManifest, componentFiles } from "../kernels/manifest.ts";
import { initModel } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { sha256Hex } from "../core/digest.ts";
import { computeAnswer, ModelCache } from "../actors/provider/answer.ts";
import { storeModel } from "../kernels/manifest.ts";
import { devnetCapacities } from "../devnet/network.ts";

const model = initModel(PRESETS.devnet, 1);
const PROMPT = Array.from({ length: 32 }, (_, i) => (i * 37 + 5) % 4096);
const partitions = place(model.config, devnetCapacities());
const objects = new Map<string, Uint8Array>();
const roots: Record<string, string> = {};
for (const [name, bytes] of Object.entries(componentFiles(model))) {
  roots[name] = sha256Hex(bytes);
  objects.set(roots[name], bytes);
}
const manifest = buildManifest(model.config, roots, {
  origin: { kind: "init", seed: 1 },
  tokenizer_root: "0".repeat(64),
});
const root = id(manifest as unknown as JsonValue);
const dir = Deno.makeTempDirSync({ prefix: "inference-bench-" });
const store = new ObjectStore(dir);
const stored = await storeModel(store, model, {
  origin: { kind: "init", seed: 1 },
  tokenizer_root: "0".repeat(64),
});
const cache = new ModelCache(store);
await cache.get(stored.root);
const tokens = generate(model, PROMPT, 8).tokens;
const proof = generationRecord(model, root, PROMPT, tokens, { max_tokens: 8, eos_id: null }, partitions);
const expect = { model_root: root, prompt_ids: PROMPT, max_tokens: 8, eos_id: null };
const headNeeded = new Set(generationNeeded(manifest, proof.traces, proof.head, partitions.length));
const all = new Map([...objects, ...proof.objects]);

Deno.bench("greedy generation of 8 tokens (devnet model, 32-id prompt)", {
  group: "provider answer",
  baseline: true,
}, () => {
  generate(model, PROMPT, 8);
});
Deno.bench(
  "the provider's answer: generation + record by 3 partitions + store",
  { group: "provider answer" },
  async () => {
    await computeAnswer(
      cache,
      { model_root: stored.root, prompt_ids: PROMPT, max_tokens: 8, eos_id: null },
      null,
      devnetCapacities(),
    );
  },
);

Deno.bench("graph checks of a response (every validator, no neural work)", {
  group: "respond on the ledger",
  baseline: true,
}, () => {
  const r = checkGeneration(proof.record, proof.traces, proof.head, manifest, expect);
  if (!r.ok) throw new Error(r.message);
});
Deno.bench("head referee of a disputed response (embedding, norm, final hidden state)", {
  group: "respond on the ledger",
}, () => {
  const v = replayGeneration({
    manifest,
    ...proof,
    stage: partitions.length,
    fetch: (r) => headNeeded.has(r) ? all.get(r) : undefined,
  });
  if (v.verdict !== "match") throw new Error(JSON.stringify(v));
});

if (Deno.env.get("NEURO_BENCH_FULL") === "1") {
  const { startInferenceNetwork } = await import("../tests/actors/provider/_network.ts");
  const { startTask } = await import("../tests/actors/worker/_process.ts");
  const { payQuestion, followJob } = await import("../actors/client/ask.ts");
  const { Journal } = await import("../actors/runtime/journal.ts");
  const { loadKeyFile } = await import("../ledger/keys.ts");
  Deno.bench("one paid 8-token answer on a real network (infer accepted → settled)", {
    group: "end to end",
    n: 1,
    warmup: 0,
  }, async () => {
    const net = await startInferenceNetwork({ challengeBlocks: 6 });
    const provider = await startTask("provider", [
      "--home",
      net.homes.provider,
      "--rpc",
      net.rpc,
      "--poll-ms",
      "50",
    ], { listens: false });
    const journal = Journal.open(`${net.dir}/client.sqlite`);
    try {
      const marks: [string, number][] = [];
      const setup = {
        chain: net.chain,
        key: await loadKeyFile(`${net.homes.client}/account.key`),
        journal,
        store: new ObjectStore(net.objects),
        progress: (line: string) => marks.push([line, performance.now()]),
        pollMs: 20,
      };
      const paid = await payQuestion(setup, {
        provider: net.accounts.provider,
        prompt: "the answer is seven apples",
        maxTokens: 8,
      });
      const t0 = performance.now();
      await followJob(setup, paid);
      const t = (re: RegExp) => (marks.find(([l]) => re.test(l))?.[1] ?? NaN) - t0;
      const compute = Number(
        /in (\d+) ms/.exec(provider.lines.find((l) => l.startsWith("answer ")) ?? "")?.[1],
      );
      const total = performance.now() - t0;
      console.log(
        `end to end: responded after ${t(/^responded/).toFixed(0)} ms, settled after ${
          total.toFixed(0)
        } ms; ` +
          `compute ${compute} ms, waiting ${(total - compute).toFixed(0)} ms (150 ms blocks, 6-block window)`,
      );
    } finally {
      journal.close();
      await provider.stop();
      await net.close();
    }
  });
}

globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
