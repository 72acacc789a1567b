/**
 * Dishonest workers for tests and demos (`--forge optimizer|forward|backward|score|chunks`): each of the first three
 * flips the lowest mantissa bit of one float32 in one committed file — the first element of an updated
 * component, of the output of the stage's block ⌊n/2⌋ (of its n blocks: the last of one or two, block 2 of
 * 3; on a stage without blocks, the embedding's), or of the gradient sent back (on stage 0, which sends no
 * gradient, the last bit of the committed squared norm). Everything downstream uses the forged bytes, so the record stays
 * graph-consistent and only a replay of the forger's stage can tell. `score` reports every window loss of a
 * score head at offset 0 (a group's first windows) halved — a better-looking model that only the head
 * referee can tell; later windows are scored honestly. `chunks` computes honestly but commits, in its trace's
 * `chunk_roots`, the empty object's chunk root for its stage's first parent component (a tree that would
 * refuse that component's true chunks at `upload`).
 *
 * @example
 * ```ts
 * import { flipFirstElement } from "./forge.ts";
 * // const forged = flipFirstElement(safetensorsBytes); // one bit differs in the first tensor's data
 * ```
 */
import { ProtocolError } from "../../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../../core/hex_float.ts";
import { blocksOf } from "../../kernels/boundary.ts";

/** What a forger perturbs. */
export type Forge = "optimizer" | "forward" | "backward" | "score" | "chunks";

/** The forge modes, for option parsing. */
export const FORGES: readonly Forge[] = ["optimizer", "forward", "backward", "score", "chunks"];

/** Parses a `--forge` value (undefined when not given); `bad_request` for an unknown mode. */
export function parseForge(value: string | undefined): Forge | null {
  if (value === undefined) return null;
  if (!(FORGES as readonly string[]).includes(value)) {
    throw new ProtocolError(
      "bad_request",
      `Cannot forge: mode is ${value}, expected one of ${FORGES.join(", ")}`,
    );
  }
  return value as Forge;
}

/** A copy of a safetensors file with the lowest bit of its first data byte flipped (its first float32). */
export function flipFirstElement(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 8) {
    throw new ProtocolError("invalid_tensor", `Cannot forge: file is ${bytes.length} bytes`);
  }
  const headerLength = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  const at = 8 + headerLength;
  if (at >= bytes.length) throw new ProtocolError("invalid_tensor", "Cannot forge: the file has no data");
  const out = bytes.slice();
  out[at] = out[at]! ^ 1;
  return out;
}

/** The component whose output `--forge forward` flips: block ⌊n/2⌋ of the stage's n blocks, else `embed`. */
export function forwardTarget(partition: readonly string[]): string {
  const blocks = blocksOf(partition);
  return blocks[Math.floor(blocks.length / 2)] ?? "embed";
}

/** Flips the lowest mantissa bit of the first float32 of an activation, in place. */
export function flipFirstFloat(y: Float32Array): void {
  const bits = new Uint32Array(y.buffer, y.byteOffset, 1);
  bits[0] = bits[0]! ^ 1;
}

/** A float64 hex float nudged to its next representable value. */
export function nudgeHexFloat(hex: string): string {
  const v = fromHexFloat(hex);
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, v);
  buf.setBigUint64(0, buf.getBigUint64(0) + 1n);
  return toHexFloat(buf.getFloat64(0));
}
