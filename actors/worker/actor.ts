/**
 * The Worker actor's handlers (PROTOCOL §10.3, §12): `open` a session for one partition, then `forward`,
 * `head` (stage 0), `backward`, `update` (with the norms of every stage and the clip, from which the worker
 * recomputes the global scale itself) and `receipt`; a score session runs `open`, `forward` and on stage 0
 * `score_head` (each window's loss, target count and argmax from the last stage's output, PROTOCOL §7.1). Each handler runs as a durable operation: it is begun
 * in the journal before computing and completed before the reply; its outputs go to the object store under
 * their roots. The inputs of earlier phases are read back from the journal, so a restarted worker rebuilds
 * its stage and computes exactly the same bytes. A worker signs a receipt only for a record whose trace of
 * its stage is the trace it computed.
 *
 * @example
 * ```ts
 * import { workerActor } from "./actor.ts";
 * // const def = workerActor({ home, forge: null, cache: new StageCache(home.store) });
 * // const actor = await DurableActor.open(home.journal, def);
 * ```
 */
import {
  canonicalBytes,
  decodeCanonical,
  hasExactKeys,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../../core/hex_float.ts";
import { isRoot } from "../../core/hex.ts";
import { clipScale } from "../../kernels/stage.ts";
import { readComponent } from "../../kernels/manifest.ts";
import { readValue } from "../../kernels/safetensors.ts";
import { scoreHeadValues } from "../../kernels/score_record.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import { stageObjects } from "../../kernels/trace_chunks.ts";
import { chunkRoot } from "../../core/chunk_tree.ts";
import { receiptBody, signReceipt } from "../../ledger/training/wire.ts";
import type { Home } from "../common/home.ts";
import { defineActor, type OperationContext, type QueryContext } from "../runtime/durable.ts";
import { flipFirstElement, type Forge, nudgeHexFloat } from "./forge.ts";
import { type OpenSession, operationOf, parseOpen, type Position } from "./session.ts";
import type { StageCache } from "./stage_cache.ts";
import {
  journaledChunkRoots,
  need,
  openOf,
  type PhaseInput,
  recorded,
  remember,
  traceOf,
} from "./journaled.ts";
import { ChunkRootCache } from "./chunk_roots.ts";

/** What the worker actor is built from. */
export interface WorkerDeps {
  readonly home: Home;
  readonly forge: Forge | null;
  readonly cache: StageCache;
}

/** The prerequisites of each position (already done in the same session). */
export const REQUIRES: Record<Position, (stage: number) => Position[]> = {
  open: () => [],
  forward: () => ["open"],
  head: () => ["forward"],
  backward: (s) => (s === 0 ? ["head"] : ["forward"]),
  update: () => ["backward"],
  receipt: () => ["update"],
  score_head: () => ["open"],
};

function bad(message: string): ProtocolError {
  return new ProtocolError("bad_request", message);
}

function rootOrNull(v: JsonValue | undefined, what: string, nullable: boolean): string | null {
  if (v === null && nullable) return null;
  if (!isRoot(v)) throw bad(`Cannot compute: ${what} is ${JSON.stringify(v)}, expected a root`);
  return v;
}

function phaseInput(input: JsonValue, keys: string[]): PhaseInput {
  if (
    !isObject(input) || !hasExactKeys(input, ["session", "step", "input"]) || !isRoot(input.session) ||
    typeof input.step !== "number" || !isObject(input.input) || !hasExactKeys(input.input, keys)
  ) {
    throw bad(`Cannot compute: expected {session, step, input: {${keys.join(", ")}}}`);
  }
  return input as PhaseInput;
}

/** The worker's actor definition. */
export function workerActor(deps: WorkerDeps) {
  const { home, forge, cache } = deps;
  const store = home.store;
  const chunks = new ChunkRootCache();
  const opens = new Map<string, OpenSession>();
  const earlier = (ctx: QueryContext, o: OpenSession) => {
    const f = ctx.operation(operationOf(o.session, o.step, "forward"));
    const h = ctx.operation(operationOf(o.session, o.step, "head"));
    const b = ctx.operation(operationOf(o.session, o.step, "backward"));
    const inputOf = (r: typeof f) => r?.input ? (decodeCanonical(r.input) as PhaseInput).input : null;
    return {
      forwardInput: (inputOf(f)?.input ?? null) as string | null,
      ...(h ? { headInput: inputOf(h)!.head_input as string } : {}),
      ...(b ? { gradientOut: inputOf(b)!.gradient_out as string } : {}),
    };
  };
  return defineActor({
    name: "worker",
    machines: [],
    handlers: {
      async open(_ctx: OperationContext, input: JsonValue) {
        const o = parseOpen(input);
        remember(opens, o);
        await cache.stage(o); // fails with object_not_found when a component is missing
        return { session: o.session, account: home.key.accountId, stage: o.stage, partition: o.partition };
      },
      async forward(ctx: OperationContext, input: JsonValue) {
        const p = phaseInput(input, ["input"]);
        const o = openOf(ctx, opens, p.session, p.step);
        const inRoot = rootOrNull(p.input.input, "input", o.stage === 0);
        if ((inRoot === null) !== (o.stage === 0)) throw bad("Cannot compute: only stage 0 has no input");
        const stage = await cache.ensure(o, "forward", {});
        const out = stage.forward(inRoot === null ? null : await cache.bytes(inRoot, "input activation"));
        const b = stage.forwardBoundaries();
        cache.mark(o, "forward");
        // A `--forge forward` worker's stage changed one block's output as it ran (its cache's boundary hook):
        // the blocks after it ran on the changed values, so the record stays graph-consistent.
        const output = await store.put(out);
        return {
          output,
          embedding: b.embedding,
          outputs: b.outputs,
          chunk_roots: stage.boundaryChunkRoots(),
        };
      },
      async head(ctx: OperationContext, input: JsonValue) {
        const p = phaseInput(input, ["head_input"]);
        const o = openOf(ctx, opens, p.session, p.step);
        if (o.stage !== 0) throw bad(`Cannot compute: only stage 0 runs the head, this is stage ${o.stage}`);
        const headInput = rootOrNull(p.input.head_input, "head_input", false)!;
        const stage = await cache.ensure(o, "head", earlier(ctx, o));
        const r = stage.head(await cache.bytes(headInput, "head input"));
        cache.mark(o, "head");
        return { loss: toHexFloat(r.loss), head_gradient: await store.put(r.headGradient) };
      },
      async backward(ctx: OperationContext, input: JsonValue) {
        const p = phaseInput(input, ["gradient_out"]);
        const o = openOf(ctx, opens, p.session, p.step);
        const g = rootOrNull(p.input.gradient_out, "gradient_out", false)!;
        const stage = await cache.ensure(o, "backward", earlier(ctx, o));
        const r = stage.backward(await cache.bytes(g, "output gradient"));
        cache.mark(o, "backward");
        let norm = toHexFloat(r.normSquared);
        let gradIn = r.gradientIn;
        const { head, blocks } = r.boundaries;
        let headNorm = head;
        if (forge === "backward") {
          // Forged consistently: the stage's norm is its last running sum, its gradient_in its first block's.
          if (gradIn === null) {
            norm = nudgeHexFloat(norm);
            if (blocks.length > 0) blocks[blocks.length - 1]!.norm_squared = norm;
            else headNorm = norm;
          } else gradIn = flipFirstElement(gradIn);
        }
        const gradientIn = gradIn === null ? null : await store.put(gradIn);
        if (gradientIn !== null) blocks[0]!.gradient_in = gradientIn;
        return {
          gradient_in: gradientIn,
          norm_squared: norm,
          head_norm_squared: headNorm,
          blocks,
          chunk_roots: stage.boundaryChunkRoots(),
        };
      },
      async update(ctx: OperationContext, input: JsonValue) {
        const p = phaseInput(input, ["norms", "clip"]);
        const o = openOf(ctx, opens, p.session, p.step);
        const norms = p.input.norms, clipHex = p.input.clip;
        const back = need<string | null>(recorded(ctx, o.session, o.step, "backward"), "backward");
        if (!Array.isArray(norms) || norms.length <= o.stage || norms[o.stage] !== back.norm_squared) {
          throw bad(
            `Cannot update: norms ${JSON.stringify(norms)} do not carry this stage's ${back.norm_squared}`,
          );
        }
        let scale: number;
        try {
          scale = clipScale(norms.map((n) => fromHexFloat(n as string)), fromHexFloat(clipHex as string));
        } catch {
          throw bad(`Cannot update: norms or clip ${JSON.stringify(clipHex)} are not hex floats`);
        }
        const stage = await cache.ensure(o, "update", earlier(ctx, o));
        const files = stage.update(o.lr, scale);
        cache.mark(o, "update");
        if (forge === "optimizer") files[o.partition[0]!] = flipFirstElement(files[o.partition[0]!]!);
        const components: Record<string, string> = {};
        const known = journaledChunkRoots(ctx, o);
        for (const name of o.partition) {
          components[name] = await store.put(files[name]!);
          known.set(components[name], chunkRoot(files[name]!));
          chunks.remember(components[name], known.get(components[name])!);
        }
        const base = traceOf(ctx, o, toHexFloat(scale), components);
        // Every other object of the stage (its inputs, parent components, outputs) is in the store.
        const chunk_roots: Record<string, string> = {};
        for (const r of stageObjects(o.parent, base, o.stage)) {
          chunk_roots[r] = known.get(r) ?? await chunks.of(r, () => cache.bytes(r, "object"));
        }
        if (forge === "chunks") {
          chunk_roots[o.parent.components[o.partition[0]!]!] = chunkRoot(new Uint8Array(0));
        }
        const trace: StageTrace = { ...base, chunk_roots };
        await store.put(canonicalBytes(trace as unknown as JsonValue));
        return { scale: toHexFloat(scale), components, trace: trace as unknown as JsonObject };
      },
      async score_head(ctx: OperationContext, input: JsonValue) {
        const p = phaseInput(input, ["head_input"]);
        const o = openOf(ctx, opens, p.session, p.step);
        if (o.stage !== 0) throw bad(`Cannot score: only stage 0 runs the head, this is stage ${o.stage}`);
        const headInput = rootOrNull(p.input.head_input, "head_input", false)!;
        const part = async (name: "embed" | "norm") =>
          readComponent(o.config, name, await cache.bytes(o.parent.components[name]!, `component ${name}`));
        const B = o.batch.input_ids.length, T = o.batch.input_ids[0]!.length;
        const hidden = readValue(await cache.bytes(headInput, "head input"), [B, T, o.config.hidden_size]);
        const v = scoreHeadValues(
          o.config,
          { embed: await part("embed"), norm: await part("norm") },
          hidden.data,
          o.batch,
        );
        cache.mark(o, "score_head");
        // The forger lies about the first windows of a group (offset 0) and answers every other score honestly.
        const losses = forge === "score" && o.step === 0 ? v.losses.map((x) => x / 2) : v.losses;
        return { losses: losses.map(toHexFloat), targets: v.targets, argmax: v.argmax };
      },
      receipt(ctx: OperationContext, input: JsonValue) {
        const p = phaseInput(input, ["record"]);
        const o = openOf(ctx, opens, p.session, p.step);
        const up = need(recorded(ctx, o.session, o.step, "update"), "update");
        const record = p.input.record as unknown as StepRecord;
        const traceRoot = id(up.trace!);
        if (
          !isObject(p.input.record) || !Array.isArray(record.traces) || record.traces[o.stage] !== traceRoot
        ) {
          throw new ProtocolError(
            "invalid_record",
            `Cannot sign receipt: the record's trace of stage ${o.stage} is not ${traceRoot}, the one computed`,
          );
        }
        if (record.parent !== o.parentRoot || record.batch !== o.batchRoot || record.step !== o.step) {
          throw new ProtocolError(
            "invalid_record",
            "Cannot sign receipt: the record's parent, batch or step differ",
          );
        }
        const body = receiptBody(o.chain_id, o.assignment, id(p.input.record), o.stage, traceRoot);
        return Promise.resolve(signReceipt(body, home.key));
      },
    },
  });
}
