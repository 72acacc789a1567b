/**
 * The real model through the kernels' training machinery (slow): one full SGD step of the imported SmolLM2 on
 * a fixed chat batch, split over three in-process stages placed by worker capacities; every stage replays
 * bit-exactly from its sealed inputs; the split step equals the single-stage step bit for bit; and identity
 * depth growth keeps the logits bit-identical.
 */
import assert from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { sha256Hex } from "../../core/digest.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../../kernels/gguf_tokenizer.ts";
import { forwardLogits } from "../../kernels/generation.ts";
import { growModel } from "../../kernels/growth.ts";
import { buildManifest, componentFiles } from "../../kernels/manifest.ts";
import { componentParameters, type Model } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { replayStage } from "../../kernels/referee.ts";
import { trainStep } from "../../kernels/step.ts";
import { smollm2File } from "./smollm2_file.ts";
import { PROBES } from "./oracle/oracle.ts";

const file = await smollm2File();
const gguf = file.path === null ? null : readGguf(await Deno.readFile(file.path));
const model: Model | null = gguf === null ? null : modelFromGguf(gguf);

/** The chat prompt with its answer; labels score only the answer tokens and the closing <|im_end|>. */
function chatBatch(): { input_ids: number[][]; labels: number[][] } {
  const tok = new Tokenizer(tokenizerFromGguf(gguf!).tokenizer, {});
  const prompt = tok.encode(PROBES.chat).ids;
  const answer = tok.encode("The capital of France is Paris.<|im_end|>").ids;
  const ids = [...prompt, ...answer];
  const labels = ids.map((_, t) => (t + 1 >= prompt.length && t + 1 < ids.length ? ids[t + 1]! : -100));
  return { input_ids: [ids], labels: [labels] };
}

Deno.test({
  name: "a 3-stage SGD step of SmolLM2 has a finite loss, equals the 1-stage step and replays stage by stage",
  ignore: model === null,
  fn: () => {
    const m = model!, c = m.config;
    const files = componentFiles(m);
    const roots = Object.fromEntries(Object.entries(files).map(([n, b]) => [n, sha256Hex(b)]));
    const parent = buildManifest(c, roots, { origin: { format: "gguf" }, tokenizer_root: "0".repeat(64) });
    const block = componentParameters(c, "block_000");
    const head = componentParameters(c, "embed") + componentParameters(c, "norm");
    const partitions = place(c, [head + 10 * block, 10 * block, 10 * block]);
    assert.deepEqual(partitions.map((p) => p.length), [12, 10, 10]);
    const batch = chatBatch();
    const args = { model: m, manifest: parent, batch, learningRate: 1e-4, clip: 1, step: 0 };
    const split = trainStep({ ...args, partitions });
    console.log(
      `SmolLM2 chat batch: loss ${split.loss}, norms ${split.norms.map((n) => n.toExponential(3))}`,
    );
    assert.ok(Number.isFinite(split.loss) && split.loss > 0, `loss ${split.loss}`);
    assert.equal(split.traces.length, 3);
    const objects = new Map(split.objects);
    for (const [n, b] of Object.entries(files)) objects.set(roots[n]!, b);
    split.traces.forEach((trace, stage) => {
      const v = replayStage({ parent, batch, stage, trace, fetch: (r) => objects.get(r) });
      assert.deepEqual(v, { verdict: "match" }, `stage ${stage}`);
    });
    const whole = trainStep({ ...args, partitions: [partitions.flat()] });
    assert.equal(whole.loss, split.loss);
    assert.equal(whole.candidateRoot, split.candidateRoot);
  },
});

Deno.test({
  name: "growing SmolLM2 by an identity block keeps its logits bit-identical",
  ignore: model === null,
  fn: () => {
    const ids = [1, 4093, 198, 19556, 905, 2]; // <|im_start|>user\nHello world<|im_end|>
    const before = forwardLogits(model!, ids);
    const grown = growModel(model!, 1);
    assert.equal(grown.config.num_hidden_layers, 31);
    const after = forwardLogits(grown, ids);
    assert.deepEqual(new Uint8Array(after.buffer), new Uint8Array(before.buffer));
  },
});
