/**
 * A worker session: one partition of one assignment, opened by the sponsor. The session id is the id of
 * the open request itself, so the same request always names the same session. Operations inside it are
 * addressed by `(session, step, position)`; their id is `id({session, operation: {step, position}})`
 * (PROTOCOL §12), so the same position delivered with another input is `conflicting_operation`.
 *
 * @example
 * ```ts
 * import { operationOf, parseOpen } from "./session.ts";
 * // const open = parseOpen(body); const opId = operationOf(open.session, open.step, "forward");
 * ```
 */
import { hasExactKeys, isObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { fromHexFloat } from "../../core/hex_float.ts";
import { isRoot } from "../../core/hex.ts";
import { type Batch, validateBatch } from "../../kernels/batch.ts";
import type { ModelConfig } from "../../kernels/config.ts";
import { type Manifest, manifestRoot, parseManifest } from "../../kernels/manifest.ts";
import { operationId } from "../runtime/journal.ts";

/**
 * The positions of a session, in the order a step reaches them; a score (PROTOCOL §7.1) runs `open`,
 * `forward` on every stage, then `score_head` on stage 0.
 */
export const POSITIONS = ["open", "forward", "head", "backward", "update", "receipt", "score_head"] as const;

/** A position of a session. */
export type Position = typeof POSITIONS[number];

/** The open request as sent. */
export interface OpenRequest {
  readonly chain_id: string;
  readonly assignment: string;
  readonly stage: number;
  readonly step: number;
  readonly partition: string[];
  /** The parent manifest itself (its root is `id(parent)`). */
  readonly parent: Manifest;
  readonly batch: Batch;
  /** Hex float. */
  readonly learning_rate: string;
}

/** An open request, checked, with what follows from it. */
export interface OpenSession extends OpenRequest {
  readonly session: string;
  readonly parentRoot: string;
  readonly batchRoot: string;
  readonly config: ModelConfig;
  readonly lr: number;
}

const OPEN_KEYS = [
  "chain_id",
  "assignment",
  "stage",
  "step",
  "partition",
  "parent",
  "batch",
  "learning_rate",
];

function bad(message: string): ProtocolError {
  return new ProtocolError("bad_request", `Cannot open session: ${message}`);
}

/** Checks an open request; `bad_request` (or the kernels' code for a bad manifest or batch) otherwise. */
export function parseOpen(value: JsonValue): OpenSession {
  if (!isObject(value) || !hasExactKeys(value, OPEN_KEYS)) {
    throw bad(`expected exactly ${[...OPEN_KEYS].sort().join(", ")}`);
  }
  const v = value;
  if (typeof v.chain_id !== "string" || v.chain_id === "") {
    throw bad(`chain_id is ${JSON.stringify(v.chain_id)}`);
  }
  if (!isRoot(v.assignment)) throw bad(`assignment is ${JSON.stringify(v.assignment)}, expected a root`);
  for (const k of ["stage", "step"] as const) {
    if (typeof v[k] !== "number" || !Number.isSafeInteger(v[k]) || (v[k] as number) < 0) {
      throw bad(`${k} is ${JSON.stringify(v[k])}, expected an integer >= 0`);
    }
  }
  const { manifest, config } = parseManifest(v.parent!);
  const partition = v.partition;
  if (
    !Array.isArray(partition) || partition.length === 0 ||
    partition.some((n) => typeof n !== "string" || !Object.hasOwn(manifest.components, n)) ||
    new Set(partition).size !== partition.length
  ) {
    throw bad(`partition ${JSON.stringify(partition)} does not name distinct components of the parent`);
  }
  if ((partition[0] === "embed") !== (v.stage === 0)) {
    throw bad(`stage ${v.stage} with partition starting at ${partition[0]}: only stage 0 holds embed`);
  }
  const batch = validateBatch(v.batch!, config);
  let lr: number;
  try {
    lr = fromHexFloat(v.learning_rate as string);
  } catch {
    throw bad(`learning_rate is ${JSON.stringify(v.learning_rate)}, expected a hex float`);
  }
  return {
    chain_id: v.chain_id,
    assignment: v.assignment,
    stage: v.stage as number,
    step: v.step as number,
    partition: partition as string[],
    parent: manifest,
    batch,
    learning_rate: v.learning_rate as string,
    session: id(value),
    parentRoot: manifestRoot(manifest),
    batchRoot: id(batch as unknown as JsonValue),
    config,
    lr,
  };
}

/** The operation id of `position` at `step` of `session`. */
export function operationOf(session: string, step: number, position: Position): string {
  return operationId(session, { step, position });
}
