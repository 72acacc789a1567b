/**
 * One score claim over 4 evaluation windows (PROTOCOL §7): building its forward record (every partition and
 * the head) and running its graph checks, for the devnet model and for a SmolLM2-135M-shaped model (random
 * weights, same arithmetic), each against its peer in the same run, a training step over the same 4 windows
 * (forward, backward and update): the score should cost a fraction of the step. Also prints the bytes a
 * head-only dispute seals (embedding, final norm, final hidden state) against the whole model's components:
 * it must leave out every transformer block, and the bench refuses to run if it does not.
 * Run: `deno bench --allow-read --allow-env bench/score_bench.ts` (`--filter devnet` for the quick half).
 */
import type { JsonValue } from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import type { Batch } from "../kernels/batch.ts";
import { type ModelConfig, PRESETS } from "../kernels/config.ts";
import { buildManifest, componentFiles, type Manifest } from "../kernels/manifest.ts";
import { componentParameters, initModel, type Model } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { checkScore } from "../kernels/score_check.ts";
import { scoreRecord, stackWindows } from "../kernels/score_record.ts";
import { scoreNeeded } from "../kernels/score_referee.ts";
import { trainStep } from "../kernels/step.ts";

type Fixture = {
  model: Model;
  manifest: Manifest;
  root: string;
  sizes: Map<string, number>;
  partitions: string[][];
  windows: Batch[];
};

function fixture(config: ModelConfig, T: number): Fixture {
  const model = initModel(config, 3);
  const files = componentFiles(model);
  const roots = Object.fromEntries(Object.entries(files).map(([n, b]) => [n, sha256Hex(b)]));
  const sizes = new Map(Object.entries(files).map(([n, b]) => [roots[n]!, b.length]));
  const manifest = buildManifest(config, roots, {
    origin: { kind: "init", seed: 3 },
    tokenizer_root: "0".repeat(64),
  });
  const total = componentParameters(config, "embed") + componentParameters(config, "norm") +
    config.num_hidden_layers * componentParameters(config, "block_000");
  const partitions = place(config, [Math.ceil(total / 2) + componentParameters(config, "embed"), total]);
  const windows = [0, 1, 2, 3].map((k): Batch => {
    const ids = Array.from({ length: T }, (_, t) => (k * 977 + t * 131) % config.vocab_size);
    return { input_ids: [ids], labels: [ids.map((_, t) => (t >= T / 2 && t < T - 1 ? ids[t + 1]! : -100))] };
  });
  return { model, manifest, root: id(manifest as unknown as JsonValue), sizes, partitions, windows };
}

function headDisputeBytes(f: Fixture): { head: number; model: number } {
  const p = scoreRecord(f.model, f.root, f.windows, f.partitions);
  const needed = scoreNeeded(f.manifest, p.traces, p.head, p.traces.length);
  const blocks = Object.entries(f.manifest.components).filter(([n]) => n.startsWith("block_")).map(([, r]) =>
    r
  );
  if (needed.some((r) => blocks.includes(r))) throw new Error("Cannot bench: a head dispute needs a block");
  const head = needed.reduce((n, r) => n + (f.sizes.get(r) ?? p.objects.get(r)!.length), 0);
  return { head, model: [...f.sizes.values()].reduce((a, b) => a + b, 0) };
}

for (
  const [name, config, T] of [["devnet", PRESETS.devnet, 64], [
    "smollm2",
    PRESETS["smollm2-135m"],
    32,
  ]] as const
) {
  let f: Fixture | null = null;
  let printed = false;
  const get = () => (f ??= fixture(config, T));
  const group = `${name} 4 windows of ${T}`;
  const n = name === "devnet" ? undefined : 2;
  Deno.bench({
    name: `${name}: one score claim (forward record + graph checks)`,
    group,
    baseline: false,
    ...(n ? { n, warmup: 0 } : {}),
    fn() {
      const x = get();
      const p = scoreRecord(x.model, x.root, x.windows, x.partitions);
      const ok = checkScore(p.record, p.traces, p.head, x.manifest, {
        model_root: x.root,
        windows: x.windows,
      });
      if (!ok.ok) throw new Error(ok.message);
    },
  });
  Deno.bench({
    name: `${name}: training step over the same windows (peer)`,
    group,
    baseline: true,
    ...(n ? { n, warmup: 0 } : {}),
    fn() {
      const x = get();
      trainStep({
        model: x.model,
        manifest: x.manifest,
        batch: stackWindows(x.windows),
        partitions: x.partitions,
        learningRate: 0.01,
        clip: 1,
        step: 0,
      });
    },
  });
  Deno.bench({
    name: `${name}: head-only dispute bytes (printed once)`,
    group: `${name} dispute bytes`,
    n: 1,
    warmup: 0,
    fn() {
      const b = headDisputeBytes(get());
      if (printed) return;
      printed = true;
      console.log(
        `${name}: a head-only dispute seals ${b.head} bytes, the model's components are ${b.model} bytes (${
          (100 * b.head / b.model).toFixed(1)
        }%)`,
      );
    },
  });
}
