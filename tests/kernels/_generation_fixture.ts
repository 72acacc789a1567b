/** Test helper: the tiny model with varied greedy choices, its manifest and component files by root. */
import type { JsonValue } from "../../core/canonical.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { buildManifest, componentFiles, type Manifest } from "../../kernels/manifest.ts";
import { PRESETS } from "../../kernels/config.ts";
import { initModel, type Model } from "../../kernels/model.ts";
import { TINY, TOKENIZER_ROOT } from "./_tiny.ts";

/** Two partitions of the tiny model: embed, norm and block 0; then blocks 1 and 2. */
export const TINY_PARTITIONS: string[][] = [["embed", "norm", "block_000"], ["block_001", "block_002"]];

/** The tiny model at `seed` with weights scaled up so that greedy choices vary from step to step. */
export function variedModel(seed = 1): {
  model: Model;
  manifest: Manifest;
  root: string;
  objects: Map<string, Uint8Array>;
} {
  const model = initModel(TINY, seed);
  for (const c of Object.values(model.components)) {
    for (const t of Object.values(c)) t.data.forEach((v, i) => t.data[i] = v * 25);
  }
  const objects = new Map<string, Uint8Array>();
  const roots: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(componentFiles(model))) {
    roots[name] = sha256Hex(bytes);
    objects.set(roots[name], bytes);
  }
  const manifest = buildManifest(model.config, roots, {
    origin: { kind: "init", seed },
    tokenizer_root: TOKENIZER_ROOT,
  });
  return { model, manifest, root: id(manifest as unknown as JsonValue), objects };
}

/** The devnet model with weights scaled up (×6) so that its greedy answers vary from token to token. */
export function lively(seed: number): Model {
  const model = initModel(PRESETS.devnet, seed);
  for (const c of Object.values(model.components)) {
    for (const t of Object.values(c)) t.data.forEach((v, i) => t.data[i] = Math.fround(v * 6));
  }
  return model;
}
