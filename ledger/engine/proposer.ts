/**
 * The proposer of the embedded engine: every `block_interval_ms` it takes pending transactions up to the
 * block byte bound, adds the attestations of the previous block it has collected (its own included), applies
 * the block through the application (`prepareProposal` → `finalizeBlock` → `commit`) and tells waiting
 * followers. Empty blocks are made too, so block time and deadlines advance. A `resolve` waits in the mempool
 * while its verdict is computed ahead off this thread (`../training/verdict_ahead.ts`, at most `HOLD_MS`).
 */
import { canonicalBytes, hasExactKeys, isObject, type JsonValue } from "../../core/canonical.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import type { LedgerApp } from "../app.ts";
import type { Attestation, Block } from "../block.ts";
import { attestationMessage, type ConsensusKey, signEd25519, verifyEd25519 } from "../consensus_key.ts";
import { LedgerView } from "../state/accessors.ts";
import type { ChainHead } from "../state/store.ts";
import type { Mempool } from "./mempool.ts";
import type { Heights } from "./heights.ts";
import { verdictsAhead } from "../training/verdict_ahead.ts";

/**
 * True for a `resolve` that waits in the mempool at `height` (`VerdictsAhead.holds`: its verdict is being
 * computed ahead, or its last object is not sealed yet, while its deadline is not near).
 */
function heldResolve(raw: Uint8Array, view: () => LedgerView, height: number): boolean {
  if (raw.length > 4096) return false; // a resolve is small; uploads are not looked at
  let claimId: unknown;
  try {
    const env = JSON.parse(new TextDecoder().decode(raw)) as {
      body?: { kind?: unknown; claim_id?: unknown };
    };
    if (env.body?.kind !== "resolve") return false;
    claimId = env.body.claim_id;
  } catch {
    return false;
  }
  if (typeof claimId !== "string") return false;
  return verdictsAhead.holds(view(), claimId, height);
}

/** Makes and commits blocks on one node. */
export class Proposer {
  readonly #app: LedgerApp;
  readonly #mempool: Mempool;
  readonly #key: ConsensusKey | undefined;
  readonly #heights: Heights;
  /** Attestations of the head block: consensus key → signature. */
  #votes = new Map<string, string>();
  #votesHeight = -1;

  constructor(app: LedgerApp, mempool: Mempool, heights: Heights, key?: ConsensusKey) {
    this.#app = app;
    this.#mempool = mempool;
    this.#heights = heights;
    this.#key = key;
    this.#attestOwn(app.info());
  }

  /** Makes, applies and commits the next block; returns its head. */
  produce(now: number): ChainHead {
    const head = this.#app.info();
    const lastCommit: Attestation[] = this.#votesHeight === head.height
      ? [...this.#votes].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([k, s]) => ({
        consensus_key: k,
        signature: s,
      }))
      : [];
    const shell: Block = {
      chain_id: head.chain_id,
      height: head.height + 1,
      time: Math.max(now, head.time),
      prev_app_hash: head.app_hash,
      last_commit: lastCommit,
      txs: [],
    };
    const reserved = canonicalBytes(shell as unknown as JsonValue).length;
    const view = () => new LedgerView(this.#app.store);
    const candidates = this.#mempool.candidates().filter((raw) => !heldResolve(raw, view, shell.height));
    const block: Block = { ...shell, txs: this.#app.prepareProposal(candidates, reserved) };
    const result = this.#app.finalizeBlock(block);
    const next = this.#app.commit();
    this.#mempool.afterCommit(result.tx_hashes, now);
    this.#attestOwn({ ...next, chain_id: head.chain_id });
    this.#heights.committed(next.height);
    return next;
  }

  #attestOwn(head: ChainHead & { chain_id: string }): void {
    this.#votes = new Map();
    this.#votesHeight = head.height;
    if (!this.#key) return;
    if (new LedgerView(this.#app.store).powerAt(this.#key.publicKey, head.height) === 0) return;
    const sig = signEd25519(this.#key, attestationMessage(head.chain_id, head.height, head.app_hash));
    this.#votes.set(this.#key.publicKey, sig);
  }

  /** Records a replica's attestation `{height, app_hash, consensus_key, signature}` of the head block. */
  attest(value: JsonValue): { ok: true } | Rejection {
    if (!isObject(value) || !hasExactKeys(value, ["height", "app_hash", "consensus_key", "signature"])) {
      return reject(
        "bad_request",
        "Cannot record attestation: expected exactly height, app_hash, consensus_key, signature",
      );
    }
    const head = this.#app.info();
    if (value.height !== head.height) {
      return reject(
        "expired",
        `Cannot record attestation: height is ${value.height}, the head is ${head.height}`,
      );
    }
    if (value.app_hash !== head.app_hash) {
      return reject(
        "app_hash_mismatch",
        `Cannot record attestation: app hash is ${value.app_hash}, expected ${head.app_hash}`,
      );
    }
    const key = value.consensus_key;
    if (typeof key !== "string" || new LedgerView(this.#app.store).powerAt(key, head.height) === 0) {
      return reject(
        "unknown_validator",
        `Cannot record attestation: ${String(key)} has no power at ${head.height}`,
      );
    }
    if (!verifyEd25519(key, attestationMessage(head.chain_id, head.height, head.app_hash), value.signature)) {
      return reject(
        "invalid_signature",
        `Cannot record attestation: the signature of ${key} does not verify`,
      );
    }
    this.#votes.set(key, value.signature as string);
    return { ok: true };
  }
}
