/**
 * The chunk roots a stage trace commits (PROTOCOL §10.4 "Chunk roots"): `chunk_roots` maps the content root
 * of every object the stage names that a dispute can upload — its parent components, its updated components,
 * its input activation (past stage 0), every block's output and input gradient, its output, the gradient it
 * receives and the one it sends back, and on stage 0 the embedding, the head input and the head gradient — to
 * the root of that object's chunk tree (`core/chunk_tree.ts`). The batch is not in it. At `upload` a chunk of
 * such an object is checked against its committed chunk root; a chunk root that is not the tree of the
 * object's bytes is itself fraud, proven by a `chunks` challenge (PROTOCOL §5).
 *
 * @example
 * ```ts
 * import { stageObjects } from "./trace_chunks.ts";
 * // const roots = stageObjects(parentManifest, trace, stage); // sorted, what `chunk_roots` must key
 * ```
 */
import { isObject } from "../core/canonical.ts";
import { isRoot } from "../core/hex.ts";
import type { Manifest } from "./manifest.ts";
import type { StageTrace } from "./trace.ts";

/** The trace fields `stageObjects` reads (a trace before its `chunk_roots` are added). */
export type TraceObjects = Pick<
  StageTrace,
  | "partition"
  | "components"
  | "input"
  | "output"
  | "gradient_out"
  | "gradient_in"
  | "blocks"
  | "embedding"
  | "head_input"
  | "head_gradient"
>;

/** The sorted, unique roots stage `stage`'s `chunk_roots` must key (see the module comment). */
export function stageObjects(parent: Manifest, t: TraceObjects, stage: number): string[] {
  const out = new Set<string>();
  for (const name of t.partition) {
    out.add(parent.components[name]!);
    out.add(t.components[name]!);
  }
  if (stage > 0) out.add(t.input);
  for (const b of t.blocks) {
    out.add(b.output);
    out.add(b.gradient_in);
  }
  for (const r of [t.output, t.gradient_out, t.gradient_in, t.embedding, t.head_input, t.head_gradient]) {
    if (typeof r === "string") out.add(r);
  }
  return [...out].sort();
}

/** `chunk_roots` for `t`: the chunk root of each of its objects, by `chunkOf` (from the object's bytes). */
export function chunkRootsFor(
  parent: Manifest,
  t: TraceObjects,
  stage: number,
  chunkOf: (root: string) => string,
): Record<string, string> {
  return Object.fromEntries(stageObjects(parent, t, stage).map((r) => [r, chunkOf(r)]));
}

/**
 * Why the traces' `chunk_roots` are malformed, or null: each must be an object keyed by exactly the
 * stage's objects with root values, and an object named by two stages must have one chunk root.
 */
export function chunkRootsError(parent: Manifest, traces: readonly StageTrace[]): string | null {
  const seen = new Map<string, string>();
  for (const [i, t] of traces.entries()) {
    const c = t.chunk_roots as unknown;
    if (!isObject(c)) return `trace ${i} chunk_roots is not an object`;
    const want = stageObjects(parent, t, i);
    const keys = Object.keys(c).sort();
    if (keys.length !== want.length || keys.some((k, j) => k !== want[j])) {
      const other = keys.find((k) => !want.includes(k)) ?? want.find((k) => !keys.includes(k));
      return `trace ${i} chunk_roots names ${keys.length} objects, expected the stage's ${want.length} (${other} differs)`;
    }
    for (const k of keys) {
      const v = c[k];
      if (!isRoot(v)) return `trace ${i} chunk root of ${k} is not a root`;
      const before = seen.get(k);
      if (before !== undefined && before !== v) {
        return `trace ${i} chunk root of ${k} is ${v}, an earlier stage committed ${before}`;
      }
      seen.set(k, v);
    }
  }
  return null;
}

/** The chunk root the traces commit for `root`, or null when none does (traces checked at `claim`). */
export function committedChunkRoot(traces: readonly StageTrace[], root: string): string | null {
  for (const t of traces) {
    const v = (t.chunk_roots as Record<string, string> | undefined)?.[root];
    if (v !== undefined) return v;
  }
  return null;
}
