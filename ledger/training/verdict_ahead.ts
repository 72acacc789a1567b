/**
 * Verdicts computed ahead of their `resolve`, off the thread that applies blocks and answers RPC. A fraud
 * challenge of a training stage is decided by replaying the stage on the sealed bytes (seconds for a real
 * model); run inside block application it would stall block production and every RPC answer of the node for
 * that long. So once a block seals the last object a live fraud challenge needs, the node starts the very
 * same `refereeVerdict` in a Worker thread that reads the committed state read-only (`verdict_worker.ts`), and
 * keeps its answer under a key naming exactly what the verdict depends on: the claim, the challenged stage, block
 * and phase, and the sealed roots (content addresses). The `resolve` handler uses a kept verdict when there is one and
 * computes it itself otherwise, so the ledger's result never depends on whether, when or where the verdict
 * was computed ahead: only on the sealed bytes, as before.
 *
 * Meanwhile the embedded proposer holds a `resolve` back (it stays in the mempool) while the committed state
 * still misses one of its sealed objects (a resolve sent right behind the last seal would otherwise share its
 * block and be computed there) and while its verdict is being computed, at most `HOLD_MS`; a replica waits
 * before applying a block with a `resolve` while a verdict is being computed, as long at most. A worker
 * that fails or runs out of memory keeps nothing: the handler then computes the verdict as it always did.
 *
 * @example
 * ```ts
 * import { verdictsAhead } from "./verdict_ahead.ts";
 * // after committing a block that sealed something: verdictsAhead.schedule(statePath, view);
 * // in resolve: verdictsAhead.take(verdictKey(claimId, challenge)) ?? refereeVerdict(...)
 * ```
 */
import { id } from "../../core/digest.ts";
import type { Verdict } from "../../kernels/referee.ts";
import type { Challenge } from "../../workflows/_claim.ts";
import type { LedgerView } from "../state/accessors.ts";
import { trainingView } from "./store.ts";

/** How long a proposer holds a `resolve`, or a replica waits, for a verdict being computed ahead. */
export const HOLD_MS = 300_000;
/** The sealed bytes from which a verdict is computed ahead (one SmolLM2 block and its activations: 15 MB). */
export const AHEAD_MIN_BYTES = 4 * 1024 * 1024;
/** A resolve is held no closer than this many blocks to its challenge's deadline. */
export const HOLD_MARGIN_BLOCKS = 5;
/** Verdicts kept at most (each is a few hundred bytes; a node resolves one dispute at a time). */
const MAX_KEPT = 16;

/** The key of the verdict of challenge `c` of claim `claimId`: everything the verdict depends on. */
export function verdictKey(claimId: string, c: Challenge): string {
  return id({
    block: c.block,
    claim: claimId,
    kind: c.kind,
    needed: [...c.needed],
    phase: c.phase,
    sealed: [...c.sealed],
    stage: c.stage,
  });
}

/** The live training claim's fraud challenge, or null. */
function liveFraud(view: LedgerView): { claimId: string; challenge: Challenge } | null {
  const t = trainingView(view);
  const l = t.lifecycle();
  const job = l?.job ? t.job(l.job) : null;
  if (job === null || job.kind !== "training" || job.claim_id === null) return null;
  const c = (job.state as { claim?: { challenge: Challenge | null } }).claim?.challenge ?? null;
  return c !== null && c.kind === "fraud" ? { claimId: job.claim_id, challenge: c } : null;
}

/** The fraud challenge of the live training claim when every object it needs is sealed, or null. */
export function readyChallenge(view: LedgerView): { claimId: string; challenge: Challenge } | null {
  const live = liveFraud(view);
  if (live === null || !live.challenge.needed.every((r) => live.challenge.sealed.includes(r))) return null;
  return live;
}

/** The bytes of the sealed objects of `c` (what its replay reads). */
function sealedBytes(view: LedgerView, c: Challenge): number {
  const t = trainingView(view);
  return c.sealed.reduce((n, r) => n + (t.sealed(r)?.size ?? 0), 0);
}

/** The verdicts of this process: computed ahead, being computed, by key. */
export class VerdictsAhead {
  /** Set by a node that schedules verdicts (`ledger/engine/node.ts`): its proposer then holds resolves. */
  enabled = false;
  /** Disputes whose objects total fewer bytes are resolved inline as before (their replay takes milliseconds). */
  minBytes = AHEAD_MIN_BYTES;
  readonly #kept = new Map<string, Verdict>();
  readonly #computing = new Map<string, { claimId: string; since: number; done: Promise<void> }>();
  /** Worker runs started, kept and failed since the process started (for tests and logs). */
  readonly counts = { started: 0, kept: 0, failed: 0, taken: 0 };

  /** Starts computing the verdict of the ready fraud challenge in `view` (state at `statePath`), once. */
  schedule(statePath: string, view: LedgerView): void {
    const ready = readyChallenge(view);
    if (ready === null || sealedBytes(view, ready.challenge) < this.minBytes) return;
    const key = verdictKey(ready.claimId, ready.challenge);
    if (this.#kept.has(key) || this.#computing.has(key)) return;
    this.counts.started++;
    const worker = new Worker(new URL("./verdict_worker.ts", import.meta.url).href, { type: "module" });
    const done = new Promise<void>((resolve) => {
      const finish = (verdict: Verdict | null) => {
        worker.terminate();
        this.#computing.delete(key);
        // An error verdict is not kept: the handler decides what a failing referee means, as it always did.
        if (verdict !== null && verdict.verdict !== "error") {
          this.#kept.set(key, verdict);
          this.counts.kept++;
          while (this.#kept.size > MAX_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
        } else this.counts.failed++;
        resolve();
      };
      worker.onmessage = (e: MessageEvent<{ key: string; verdict: Verdict | null }>) =>
        finish(e.data.key === key ? e.data.verdict : null);
      worker.onerror = (e) => {
        e.preventDefault();
        finish(null);
      };
    });
    this.#computing.set(key, { claimId: ready.claimId, since: Date.now(), done });
    worker.postMessage({ statePath, claimId: ready.claimId, key });
  }

  /** The verdict computed ahead for `key` (kept for a replay of the same block), or undefined. */
  take(key: string): Verdict | undefined {
    const v = this.#kept.get(key);
    if (v !== undefined) this.counts.taken++;
    return v;
  }

  /**
   * True when the proposer should leave the `resolve` of `claimId` in the mempool at `height`: the claim is
   * the live training claim, its fraud challenge's deadline is more than `HOLD_MARGIN_BLOCKS` away, and either
   * its verdict is being computed or (on a node that computes verdicts ahead, for a large dispute) the
   * committed state still misses a sealed object it needs.
   */
  holds(view: LedgerView, claimId: string, height: number): boolean {
    const live = liveFraud(view);
    if (live === null || live.claimId !== claimId || height + HOLD_MARGIN_BLOCKS >= live.challenge.deadline) {
      return false;
    }
    if (this.computing(claimId)) return true;
    const c = live.challenge;
    if (!this.enabled || c.needed.every((r) => c.sealed.includes(r))) return false;
    return sealedBytes(view, c) + c.uploads.reduce((n, u) => n + u.bytes, 0) >= this.minBytes;
  }

  /** True while a verdict for `claimId` is being computed, for at most `HOLD_MS`. */
  computing(claimId: string, now = Date.now()): boolean {
    for (const c of this.#computing.values()) {
      if (c.claimId === claimId && now - c.since < HOLD_MS) return true;
    }
    return false;
  }

  /** Resolves when no verdict is being computed any more, or after `HOLD_MS` at most. */
  async settled(): Promise<void> {
    const pending = [...this.#computing.values()].map((c) => c.done);
    if (pending.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.all(pending), new Promise((r) => (timer = setTimeout(r, HOLD_MS)))]);
    clearTimeout(timer);
  }
}

/** The process's verdicts computed ahead (verdicts are deterministic, so every ledger of a process shares them). */
export const verdictsAhead = new VerdictsAhead();
