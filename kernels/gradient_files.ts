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
import type { ModelConfig } from "./config.ts";
import { EMBED_TENSOR } from "./model.ts";
import { allocSafetensors, type Tensors, VIEWS_IN_FILES } from "./safetensors.ts";

/** The file buffers of the gradients kept so far, by component name. */
export class GradientFiles {
  readonly #files = new Map<string, Uint8Array>();
  readonly #views = new Map<string, Tensors>(); // from `alloc`, until kept

  /** True when gradients are kept in file buffers on this host (and the update may run in place). */
  readonly inFiles: boolean = VIEWS_IN_FILES;

  /**
   * With `shared` every file buffer is on a `SharedArrayBuffer` (`allocSafetensors`), so the update and the
   * files' digests can run on task workers (`task_pool.ts`); the training step asks for that.
   */
  constructor(readonly options: { readonly shared?: boolean } = {}) {}

  /**
   * A new file buffer for component `name` with tensors of these shapes, returned as views to compute the
   * gradient into; `keep` of exactly those views then copies nothing. Only where `inFiles`.
   */
  alloc(name: string, shapes: Record<string, readonly number[]>): Tensors {
    const { bytes, tensors } = allocSafetensors(shapes, this.options);
    this.#files.set(name, bytes);
    this.#views.set(name, tensors);
    return tensors;
  }

  /**
   * Where the head writes the tied embedding's gradient [V,C]: the view of a new `embed` file (`alloc`;
   * `stageBackward` then adds the lookup's part into it in place and `keep` copies nothing), or undefined
   * when gradients are not kept in files (the head makes a new array).
   */
  embedView(c: ModelConfig): Float32Array | undefined {
    if (!this.inFiles) return undefined;
    return this.alloc("embed", { [EMBED_TENSOR]: [c.vocab_size, c.hidden_size] })[EMBED_TENSOR]!.data;
  }

  /**
   * For `stageBackward`'s `into`: a new file buffer's views for component `name` (`alloc`), to compute its
   * gradients into; undefined when gradients are not kept in files.
   */
  readonly into = (name: string, shapes: Record<string, readonly number[]>): Tensors | undefined =>
    this.inFiles ? this.alloc(name, shapes) : undefined;

  /**
   * Copies `grads` into a new file buffer for component `name` and returns the views of that buffer; when
   * `alloc` gave views for `name` with exactly these tensor names and shapes, only the gradients not already
   * computed in those views are copied into them, and the views are returned.
   */
  readonly keep = (name: string, grads: Tensors): Tensors => {
    if (!this.inFiles) return grads;
    const own = this.#views.get(name);
    this.#views.delete(name);
    const keys = Object.keys(grads);
    if (
      own !== undefined && keys.length === Object.keys(own).length &&
      keys.every((t) => own[t] !== undefined && own[t].data.length === grads[t]!.data.length)
    ) {
      for (const t of keys) if (own[t]!.data !== grads[t]!.data) own[t]!.data.set(grads[t]!.data);
      return own;
    }
    const shapes = Object.fromEntries(Object.entries(grads).map(([t, v]) => [t, v.shape]));
    const { bytes, tensors } = allocSafetensors(shapes, this.options);
    for (const [t, v] of Object.entries(tensors)) v.data.set(grads[t]!.data);
    this.#files.set(name, bytes);
    return tensors;
  };

  /** The file buffer holding component `name`'s kept gradient (its update once written in place). */
  get(name: string): Uint8Array | undefined {
    return this.#files.get(name);
  }
}
