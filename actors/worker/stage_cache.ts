/**
 * The worker's in-memory stages: one `OpenStage` per session, holding the forward (and head) state that the
 * later phases need. After a restart the memory is empty; `ensure` rebuilds a stage by re-running its
 * earlier phases from their journaled inputs (the kernels are deterministic, so the bytes are identical).
 * Every kernel phase run is counted, so tests can see that a re-delivery computes nothing.
 *
 * @example
 * ```ts
 * import { StageCache } from "./stage_cache.ts";
 * // const cache = new StageCache(store); const s = await cache.stage(open); s.forward(null);
 * ```
 */
import { canonicalBytes, type JsonValue } from "../../core/canonical.ts";
import type { ObjectStore } from "../../core/object_store.ts";
import { RetryableError } from "../../core/errors.ts";
import type { BoundaryOptions } from "../../kernels/boundary.ts";
import { type OpenStage, openStage } from "../../kernels/stage_io.ts";
import type { OpenSession, Position } from "./session.ts";

/** Kernel phase runs by position. */
export type Computations = Record<Exclude<Position, "open" | "receipt">, number>;

interface Entry {
  readonly stage: OpenStage;
  /** The phases run on `stage`, in order. */
  readonly ran: Position[];
}

/** What `ensure` needs to rebuild: the journaled inputs of the earlier phases. */
export interface Earlier {
  readonly forwardInput?: string | null;
  readonly headInput?: string;
  readonly gradientOut?: string;
}

/** How many sessions keep their stage in memory. */
export const MAX_OPEN_STAGES = 4;

/** Open stages by session. */
export class StageCache {
  private readonly entries = new Map<string, Entry>();
  /** Kernel phases run since the process started. */
  readonly computations: Computations = { forward: 0, head: 0, backward: 0, update: 0, score_head: 0 };

  /**
   * `boundaries` gives the block-boundary options of a session's stage (the `--forge forward` worker's hook
   * that changes one block's output); none by default.
   */
  constructor(
    readonly store: ObjectStore,
    private readonly boundaries?: (open: OpenSession) => BoundaryOptions | undefined,
  ) {}

  /**
   * The session's stage, opened from its components in the store. A missing component is a `RetryableError`
   * naming it (`object_not_found: ...`): the operation stays begun, and succeeds once the sponsor has copied
   * the component here — a missing object must never become a recorded final answer.
   */
  async stage(open: OpenSession): Promise<Entry> {
    const found = this.entries.get(open.session);
    if (found) return found;
    const components: Record<string, Uint8Array> = {};
    for (const name of open.partition) {
      const root = open.parent.components[name]!;
      if (!(await this.store.has(root))) {
        throw new RetryableError(
          `object_not_found: Cannot open stage ${open.stage}: component ${name} (${root}) is not in the object store`,
        );
      }
      components[name] = await this.store.get(root);
    }
    await this.store.put(canonicalBytes(open.batch as unknown as JsonValue));
    const entry = {
      stage: openStage({
        config: open.config,
        partition: open.partition,
        components,
        batch: open.batch,
        ...(this.boundaries?.(open) ? { boundaries: this.boundaries(open)! } : {}),
      }),
      ran: [] as Position[],
    };
    this.entries.set(open.session, entry);
    // Keep the stages of the most recent sessions only: an evicted one is rebuilt from the journal if needed.
    while (this.entries.size > MAX_OPEN_STAGES) this.entries.delete(this.entries.keys().next().value!);
    return entry;
  }

  /** Bytes of an object in the store; a `RetryableError` naming what it was for when missing (see `stage`). */
  async bytes(root: string, what: string): Promise<Uint8Array> {
    if (!(await this.store.has(root))) {
      throw new RetryableError(
        `object_not_found: Cannot compute: ${what} ${root} is not in the object store`,
      );
    }
    return await this.store.get(root);
  }

  /**
   * Brings the session's stage to just before `position`, re-running earlier phases from `earlier` when
   * the memory lost them (a restart). Returns the stage.
   */
  async ensure(open: OpenSession, position: Position, earlier: Earlier): Promise<OpenStage> {
    const entry = await this.stage(open);
    const need: Position[] = position === "forward"
      ? []
      : position === "head"
      ? ["forward"]
      : position === "backward"
      ? (open.stage === 0 ? ["forward", "head"] : ["forward"])
      : (open.stage === 0 ? ["forward", "head", "backward"] : ["forward", "backward"]);
    if (need.every((p) => entry.ran.includes(p)) && !entry.ran.includes(position)) return entry.stage;
    // Out of order or repeated in memory: rebuild from scratch.
    this.entries.delete(open.session);
    const fresh = await this.stage(open);
    for (const p of need) await this.run(fresh, p, earlier);
    return fresh.stage;
  }

  private async run(entry: Entry, p: Position, earlier: Earlier): Promise<void> {
    if (p === "forward") {
      const input = earlier.forwardInput ?? null;
      entry.stage.forward(input === null ? null : await this.bytes(input, "input activation"));
      this.computations.forward++;
    } else if (p === "head") {
      entry.stage.head(await this.bytes(earlier.headInput!, "head input"));
      this.computations.head++;
    } else if (p === "backward") {
      entry.stage.backward(await this.bytes(earlier.gradientOut!, "output gradient"));
      this.computations.backward++;
    }
    entry.ran.push(p);
  }

  /** Marks `position` as run on the session's stage (after the caller ran it). */
  mark(open: OpenSession, position: Position): void {
    const e = this.entries.get(open.session);
    if (e) e.ran.push(position);
    if (position !== "open" && position !== "receipt") this.computations[position]++;
  }
}
