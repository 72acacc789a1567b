/** Test helper: an honest three-stage step on the tiny model, with its parent manifest. */
import { sha256Hex } from "../../core/digest.ts";
import { buildManifest, componentFiles, type Manifest } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { type StepOutput, trainStep } from "../../kernels/step.ts";
import { TINY, TINY_BATCH, TOKENIZER_ROOT } from "./_tiny.ts";

/** The three-stage placement used by the referee and record tests. */
export const THREE_STAGES = [["embed", "norm", "block_000"], ["block_001"], ["block_002"]];

/** An honest step plus every object a referee could need (parent components included). */
export function honestStep(): { parent: Manifest; out: StepOutput; objects: Map<string, Uint8Array> } {
  const model = initModel(TINY, 9);
  const files = componentFiles(model);
  const roots = Object.fromEntries(Object.entries(files).map(([n, b]) => [n, sha256Hex(b)]));
  const parent = buildManifest(TINY, roots, {
    origin: { kind: "init", seed: 9 },
    tokenizer_root: TOKENIZER_ROOT,
  });
  const out = trainStep({
    model,
    manifest: parent,
    batch: TINY_BATCH,
    partitions: THREE_STAGES,
    learningRate: 0.25,
    clip: 0.5,
    step: 7,
  });
  const objects = new Map(out.objects);
  for (const [n, b] of Object.entries(files)) objects.set(roots[n]!, b);
  return { parent, out, objects };
}
