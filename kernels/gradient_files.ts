/**
 * Gradients kept in the buffers of the files their updates will be written to: `keep` (a `stageBackward`
 * option) copies each component's gradient, as soon as it exists, into a canonical safetensors buffer
 * (`allocSafetensors`), so the original arrays can be dropped; `applyUpdateInPlace` then overwrites each
 * gradient with its update there, and the file's bytes are the committed component with no serialized copy
 * beside the tensors. Used by the training step (`step.ts`) and the worker's stage (`stage_io.ts`). On a
 * big-endian host (`VIEWS_IN_FILES` false) `keep` returns the gradients unchanged and no file is held.
 *
 * @example
 * ```ts
 * import { GradientFiles } from "./gradient_files.ts";
 * const files = new GradientFiles();
 * const g = files.keep("norm", { weight: { shape: [2], data: new Float32Array([1, 2]) } });
 * files.get("norm"); // the bytes of the file whose tensor `weight` is g.weight.data
 * ```
 */
import { allocSafetensors, type Tensors, VIEWS_IN_FILES } from "./safetensors.ts";

/** The file buffers of the gradients kept so far, by component name. */
export class GradientFiles {
  readonly #files = new Map<string, Uint8Array>();

  /** True when gradients are kept in file buffers on this host (and the update may run in place). */
  readonly inFiles: boolean = VIEWS_IN_FILES;

  /** Copies `grads` into a new file buffer for component `name` and returns the views of that buffer. */
  readonly keep = (name: string, grads: Tensors): Tensors => {
    if (!this.inFiles) return grads;
    const shapes = Object.fromEntries(Object.entries(grads).map(([t, v]) => [t, v.shape]));
    const { bytes, tensors } = allocSafetensors(shapes);
    for (const [t, v] of Object.entries(tensors)) v.data.set(grads[t]!.data);
    this.#files.set(name, bytes);
    return tensors;
  };

  /** The file buffer holding component `name`'s kept gradient (its update once written in place). */
  get(name: string): Uint8Array | undefined {
    return this.#files.get(name);
  }
}
