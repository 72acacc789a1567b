/**
 * What the devnet reads from the chain, and only from the chain (so a resumed devnet shows the same thing as
 * one that never stopped): the training lifecycle, every claim ever made (found by scanning the committed
 * blocks for `claim` transactions, its outcome from `/claim?id=`, its loss from the record in its metadata),
 * account balances, the supply totals, and whether every validator holds the same app hash at one height.
 *
 * @example
 * ```ts
 * import { ChainView } from "./chain_view.ts";
 * const chain = new ChainView("http://127.0.0.1:26657");
 * (await chain.lifecycle()).training_round;
 * ```
 */
import { isObject, type JsonObject, type JsonValue, parseJson } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { fromHexFloat } from "../core/hex_float.ts";

/** The parts of `/lifecycle` the devnet shows. */
export interface Lifecycle {
  readonly height: number;
  readonly learning_root: string | null;
  readonly serving_root: string | null;
  readonly training_round: number;
  readonly assignment: JsonObject | null;
  readonly claim: { claim_id: string; kind: string; state: JsonObject } | null;
}

/** One claim found on the chain and what became of it. */
export interface ClaimOutcome {
  readonly claim_id: string;
  /** Height of the block that committed the `claim` transaction. */
  readonly height: number;
  readonly owner: string;
  readonly workers: string[];
  /** `claimed`, `challenged`, ..., `settled`, `rejected` or `expired`. */
  readonly status: string;
  /** Why a rejected claim was rejected. */
  readonly reason: string | null;
  /** The loss the record states (float64). */
  readonly loss: number | null;
  /** The candidate model root the claim proposes. */
  readonly model_root: string | null;
  /** The root of the batch the claim trained on (its record's `batch`). */
  readonly batch: string | null;
}

/** A scanned transaction: its block height, kind, sender and whether it was accepted. */
export interface ScannedTx {
  readonly height: number;
  readonly kind: string;
  readonly sender: string;
  readonly ok: boolean;
  readonly code: string | null;
  readonly body: JsonObject;
  readonly txid: string;
}

/** Reads a validator's RPC. */
/** Block reads a scan keeps in flight at once (the validator's RPC serves them concurrently). */
const SCAN_CONCURRENCY = 16;

export class ChainView {
  readonly url: string;
  /** Blocks already scanned, by height (committed blocks never change). */
  readonly #txs = new Map<number, ScannedTx[]>();

  constructor(url: string) {
    this.url = url.replace(/\/$/, "");
  }

  /** GET a canonical JSON answer; null on 404. */
  async get(path: string): Promise<JsonValue | null> {
    const res = await fetch(this.url + path);
    const text = await res.text();
    if (res.status === 404) return null;
    if (res.status !== 200) throw new Error(`Cannot read ${this.url}${path}: HTTP ${res.status} ${text}`);
    return parseJson(text);
  }

  /** `/status`. */
  async status(): Promise<{ height: number; app_hash: string }> {
    return await this.get("/status") as unknown as { height: number; app_hash: string };
  }

  /** `/lifecycle`. */
  async lifecycle(): Promise<Lifecycle> {
    return await this.get("/lifecycle") as unknown as Lifecycle;
  }

  /** An account's balance in atoms. */
  async balance(account: string): Promise<number> {
    return ((await this.get(`/account/${account}`)) as { balance: number }).balance;
  }

  /** The app hash of block `height`, waiting up to `waitMs` for it. */
  async appHash(height: number, waitMs = 10_000): Promise<string | null> {
    const b = await this.get(`/block?height=${height}&wait=${waitMs}`);
    return isObject(b) && typeof b.app_hash === "string" ? b.app_hash : null;
  }

  /**
   * Every transaction of blocks 1..height (each block read once, `SCAN_CONCURRENCY` reads in flight: a
   * devnet of 250 ms blocks has thousands of them by its summary).
   */
  async transactions(height: number): Promise<ScannedTx[]> {
    const missing: number[] = [];
    for (let h = 1; h <= height; h++) if (!this.#txs.has(h)) missing.push(h);
    for (let i = 0; i < missing.length; i += SCAN_CONCURRENCY) {
      await Promise.all(missing.slice(i, i + SCAN_CONCURRENCY).map((h) => this.#scan(h)));
    }
    const out: ScannedTx[] = [];
    for (let h = 1; h <= height; h++) out.push(...this.#txs.get(h)!);
    return out;
  }

  /**
   * Scans the blocks committed so far every `everyMs` until `signal` aborts, so a summary at the end reads
   * only the last few (a transient read failure is tried again at the next turn).
   */
  async followBlocks(signal: AbortSignal, everyMs = 2_000): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.transactions((await this.status()).height);
      } catch { /* the next turn reads it */ }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, everyMs);
        signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
      });
    }
  }

  async #scan(h: number): Promise<void> {
    const b = await this.get(`/block?height=${h}`);
    if (!isObject(b) || !isObject(b.block)) throw new Error(`Cannot read block ${h} from ${this.url}`);
    const envelopes = (b.block.txs ?? []) as JsonObject[];
    const results = (b.results ?? []) as JsonObject[];
    this.#txs.set(
      h,
      envelopes.map((e, i) => {
        const body = e.body as JsonObject;
        const r = results[i] ?? {};
        return {
          height: h,
          kind: String(body.kind),
          sender: String(e.public_key),
          ok: r.ok === true,
          code: typeof r.code === "string" ? r.code : null,
          body,
          txid: id({ body, public_key: e.public_key ?? null }),
        };
      }),
    );
  }

  /** Every accepted claim on the chain up to `height`, oldest first, with its outcome. */
  async claims(height: number): Promise<ClaimOutcome[]> {
    const out: ClaimOutcome[] = [];
    for (const tx of await this.transactions(height)) {
      if (tx.kind !== "claim" || !tx.ok) continue;
      const answer = await this.get(`/claim?id=${tx.txid}`);
      const state = isObject(answer) && isObject(answer.state) ? answer.state : {};
      const record = isObject(tx.body.metadata) ? tx.body.metadata[String(tx.body.record_root)] : undefined;
      out.push({
        claim_id: tx.txid,
        height: tx.height,
        owner: tx.sender,
        workers: (tx.body.workers ?? []) as string[],
        status: typeof state.status === "string" ? state.status : "unknown",
        reason: typeof state.reason === "string" ? state.reason : null,
        loss: claimLoss(tx.body.metadata ?? null, String(tx.body.record_root)),
        model_root: isObject(record) && typeof record.model_root === "string" ? record.model_root : null,
        batch: isObject(record) && typeof record.batch === "string" ? record.batch : null,
      });
    }
    return out;
  }
}

/** The loss a claim states, from its metadata alone (null when the record is not there). */
export function claimLoss(metadata: JsonValue, recordRoot: string): number | null {
  const record = isObject(metadata) ? metadata[recordRoot] : undefined;
  return isObject(record) && typeof record.loss === "string" ? fromHexFloat(record.loss) : null;
}
