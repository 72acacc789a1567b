/**
 * A replica of the embedded engine: follows the proposer over HTTP (`GET /block?height=h&wait=ms`), checks and
 * re-applies every block, compares its app hash with the proposer's, commits, and attests the block by
 * signing its app hash with its consensus key (`POST /attest`). A replica that computes a different app hash
 * (or receives a block it cannot accept) stops and reports the height and both hashes; it never commits the
 * block it disagrees with. Every call to the proposer has a deadline: a long poll that gets no answer within
 * its wait plus `upstreamMs` is abandoned and retried (logged once as `upstream_timeout`), and a process that
 * may not connect to the proposer at all stops with `permission_denied` instead of retrying forever.
 */
import { canonical, isObject, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { LedgerApp } from "../app.ts";
import { attestationMessage, type ConsensusKey, signEd25519 } from "../consensus_key.ts";
import { LedgerView } from "../state/accessors.ts";
import type { Heights } from "./heights.ts";
import { verdictsAhead } from "../training/verdict_ahead.ts";

/** Why a replica stopped. */
export interface HaltReport {
  readonly code: "app_hash_mismatch" | "invalid_block" | "permission_denied";
  readonly height: number;
  readonly proposer_app_hash: string | null;
  readonly replica_app_hash: string | null;
  readonly message: string;
}

const POLL_MS = 5_000;

/** Follows a proposer until stopped or halted. */
export class Replica {
  readonly #app: LedgerApp;
  readonly #url: string;
  readonly #heights: Heights;
  readonly #key: ConsensusKey | undefined;
  readonly #log: (line: string) => void;
  readonly #inflight = new Set<Promise<void>>();
  readonly #upstreamMs: number;
  /** The state file, for verdicts computed ahead (`../training/verdict_ahead.ts`); null turns them off. */
  readonly #statePath: string | null;

  constructor(
    app: LedgerApp,
    proposerUrl: string,
    heights: Heights,
    key: ConsensusKey | undefined,
    log: (line: string) => void,
    upstreamMs = 10_000,
    statePath: string | null = null,
  ) {
    this.#statePath = statePath;
    this.#upstreamMs = upstreamMs;
    this.#app = app;
    this.#url = proposerUrl.replace(/\/$/, "");
    this.#heights = heights;
    this.#key = key;
    this.#log = log;
  }

  /** Runs until `signal` aborts (returns null) or the replica halts (returns the report). */
  async run(signal: AbortSignal): Promise<HaltReport | null> {
    let unreachable = false;
    while (!signal.aborted) {
      const height = this.#app.info().height + 1;
      let text: string;
      let status: number;
      try {
        const deadline = AbortSignal.timeout(POLL_MS + this.#upstreamMs);
        const res = await fetch(`${this.#url}/block?height=${height}&wait=${POLL_MS}`, {
          signal: AbortSignal.any([signal, deadline]),
        });
        status = res.status;
        text = await res.text();
        unreachable = false;
      } catch (e) {
        if (signal.aborted) return null;
        if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
          return {
            code: "permission_denied",
            height,
            proposer_app_hash: null,
            replica_app_hash: null,
            message: `Cannot follow ${this.#url}: ${(e as Error).message}`,
          };
        }
        const why = e instanceof DOMException && e.name === "TimeoutError"
          ? `no answer within ${POLL_MS + this.#upstreamMs} ms (upstream_timeout)`
          : (e as Error).message;
        if (!unreachable) this.#log(`proposer ${this.#url} unreachable (${why}); retrying`);
        unreachable = true;
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      if (status === 404) continue;
      if (status !== 200) {
        this.#log(`proposer answered ${status} for block ${height}: ${text.slice(0, 200)}`);
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      // A resolve is applied with its verdict computed ahead when one is being computed (at most HOLD_MS).
      if (this.#statePath !== null && text.includes('"kind":"resolve"')) await verdictsAhead.settled();
      const halt = this.#apply(height, text);
      if (halt) return halt;
      if (this.#statePath !== null && text.includes('"kind":"seal"')) {
        verdictsAhead.schedule(this.#statePath, new LedgerView(this.#app.store));
      }
    }
    return null;
  }

  #apply(height: number, text: string): HaltReport | null {
    let proposerHash: string | null = null;
    try {
      const answer = parseJson(text);
      if (!isObject(answer) || answer.height !== height || typeof answer.app_hash !== "string") {
        throw new ProtocolError("bad_request", `Cannot follow: the answer for block ${height} is malformed`);
      }
      proposerHash = answer.app_hash;
      const result = this.#app.finalizeBlock(answer.block);
      if (result.app_hash !== proposerHash) {
        return {
          code: "app_hash_mismatch",
          height,
          proposer_app_hash: proposerHash,
          replica_app_hash: result.app_hash,
          message:
            `Cannot follow block ${height}: app hash is ${result.app_hash}, the proposer has ${proposerHash}`,
        };
      }
      const head = this.#app.commit();
      this.#heights.committed(head.height);
      this.#log(`block ${head.height} txs ${result.results.length} app_hash ${head.app_hash}`);
      const sent = this.#attest(head.height, head.app_hash);
      this.#inflight.add(sent);
      sent.finally(() => this.#inflight.delete(sent));
      return null;
    } catch (e) {
      return {
        code: "invalid_block",
        height,
        proposer_app_hash: proposerHash,
        replica_app_hash: null,
        message: `Cannot follow block ${height}: ${(e as Error).message}`,
      };
    }
  }

  /** Resolves when every attestation in flight has been sent or lost. */
  async idle(): Promise<void> {
    await Promise.all([...this.#inflight]);
  }

  async #attest(height: number, appHash: string): Promise<void> {
    const key = this.#key;
    if (!key || new LedgerView(this.#app.store).powerAt(key.publicKey, height) === 0) return;
    const chainId = this.#app.genesis.chain_id;
    const body = {
      height,
      app_hash: appHash,
      consensus_key: key.publicKey,
      signature: signEd25519(key, attestationMessage(chainId, height, appHash)),
    };
    try {
      const res = await fetch(`${this.#url}/attest`, {
        signal: AbortSignal.timeout(this.#upstreamMs),
        method: "POST",
        headers: { "content-type": "application/json" },
        body: canonical(body),
      });
      await res.body?.cancel();
    } catch {
      // A lost attestation only costs this validator its share of one block's verifier reward.
    }
  }
}
