/**
 * Reading a worker session back from the journal: the checked open request, the recorded value of a
 * finished phase, and the stage's trace (PROTOCOL §10.4) assembled from the inputs and results of its
 * journaled phases. The handlers read earlier phases only this way, so a restarted worker sees exactly what
 * the first one recorded.
 *
 * @example
 * ```ts
 * import { recorded } from "./journaled.ts";
 * // const fwd = recorded(ctx, session, step, "forward"); // {output} or null
 * ```
 */
import { decodeCanonical, isObject, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { boundaryFields, stageBoundaries } from "../../kernels/boundary.ts";
import type { StageTrace } from "../../kernels/trace.ts";
import type { QueryContext } from "../runtime/durable.ts";
import { type OpenSession, operationOf, parseOpen, type Position } from "./session.ts";

/** The operation input of every position but `open`. */
export interface PhaseInput extends JsonObject {
  session: string;
  step: number;
  input: JsonObject;
}

/** The recorded value of a finished `position` of the session, or null when it has not finished (ok). */
export function recorded(
  ctx: QueryContext,
  session: string,
  step: number,
  position: Position,
): JsonObject | null {
  const op = ctx.operation(operationOf(session, step, position));
  if (op === null || op.status !== "done" || op.result === null) return null;
  const r = decodeCanonical(op.result) as { ok: boolean; value?: JsonObject };
  return r.ok ? r.value! : null;
}

/** How many parsed open requests a worker keeps in memory (the rest are parsed again from the journal). */
export const MAX_REMEMBERED_OPENS = 16;

/** Remembers a parsed open request, forgetting the oldest beyond `MAX_REMEMBERED_OPENS`. */
export function remember(opens: Map<string, OpenSession>, open: OpenSession): void {
  opens.set(open.session, open);
  while (opens.size > MAX_REMEMBERED_OPENS) opens.delete(opens.keys().next().value!);
}

/** The checked open request of `session` (from the journal, remembered in `opens`), or `not_found`. */
export function openOf(
  ctx: QueryContext,
  opens: Map<string, OpenSession>,
  session: string,
  step: number,
): OpenSession {
  const known = opens.get(session);
  if (known) return known;
  const op = ctx.operation(operationOf(session, step, "open"));
  if (op === null || op.input === null) {
    throw new ProtocolError(
      "not_found",
      `Cannot find session ${session} at step ${step}: it was never opened`,
    );
  }
  const open = parseOpen(decodeCanonical(op.input));
  remember(opens, open);
  return open;
}

/** The value of a finished phase, or `invalid_transition` naming it. */
export function need<T extends JsonValue>(
  v: JsonObject | null,
  what: string,
): JsonObject & Record<string, T> {
  if (v === null) throw new ProtocolError("invalid_transition", `Cannot compute: ${what} has not finished`);
  return v as JsonObject & Record<string, T>;
}

/**
 * The chunk roots of the boundary activations and gradients the session's forward and backward hashed, as
 * journaled with their results (`chunk_roots`); `invalid_transition` for phases journaled without them.
 */
export function journaledChunkRoots(ctx: QueryContext, o: OpenSession): Map<string, string> {
  const out = new Map<string, string>();
  for (const position of ["forward", "backward"] as const) {
    const r = need<JsonValue>(recorded(ctx, o.session, o.step, position), position);
    if (!isObject(r.chunk_roots)) {
      throw new ProtocolError(
        "invalid_transition",
        `Cannot assemble the trace of session ${o.session}: its ${position} was journaled without chunk roots`,
      );
    }
    for (const [k, v] of Object.entries(r.chunk_roots)) out.set(k, v as string);
  }
  return out;
}

/** The trace of the session's stage from its journaled phases (PROTOCOL §10.4), without its `chunk_roots`. */
export function traceOf(
  ctx: QueryContext,
  o: OpenSession,
  scale: string,
  components: Record<string, string>,
): Omit<StageTrace, "chunk_roots"> {
  const fwdOp = ctx.operation(operationOf(o.session, o.step, "forward"))!;
  const fwdIn = (decodeCanonical(fwdOp.input!) as PhaseInput).input.input as string | null;
  const fwd = need<string>(recorded(ctx, o.session, o.step, "forward"), "forward");
  const backOp = ctx.operation(operationOf(o.session, o.step, "backward"))!;
  const gOut = (decodeCanonical(backOp.input!) as PhaseInput).input.gradient_out as string;
  const back = need<string | null>(recorded(ctx, o.session, o.step, "backward"), "backward");
  let head = {};
  const fwdBlocks = fwd.outputs as unknown as string[] | undefined;
  const backBlocks = back.blocks as unknown as { gradient_in: string; norm_squared: string }[] | undefined;
  if (!Array.isArray(fwdBlocks) || !Array.isArray(backBlocks)) {
    throw new ProtocolError(
      "invalid_transition",
      `Cannot assemble the trace of session ${o.session}: its phases were journaled without block commitments`,
    );
  }
  const boundaries = boundaryFields(
    stageBoundaries(
      o.partition,
      { embedding: (fwd.embedding ?? null) as string | null, outputs: fwdBlocks },
      { head: (back.head_norm_squared ?? null) as string | null, blocks: backBlocks },
      components,
    ),
  );
  if (o.stage === 0) {
    const headOp = ctx.operation(operationOf(o.session, o.step, "head"))!;
    const h = need<string>(recorded(ctx, o.session, o.step, "head"), "head");
    head = {
      head_input: (decodeCanonical(headOp.input!) as PhaseInput).input.head_input as string,
      head_gradient: h.head_gradient!,
      loss: h.loss!,
    };
  }
  return {
    parent: o.parentRoot,
    partition: [...o.partition],
    step: o.step,
    phase: "train",
    input: fwdIn ?? o.batchRoot,
    output: fwd.output!,
    ...head,
    gradient_out: gOut,
    gradient_in: back.gradient_in as string | null,
    norm_squared: back.norm_squared as string,
    learning_rate: o.learning_rate,
    scale,
    components,
    ...boundaries,
  };
}
