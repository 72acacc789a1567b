/**
 * Blocks of the embedded engine. A block is the canonical JSON object
 * `{chain_id, height, time, prev_app_hash, last_commit, txs}`: `txs` are envelopes in proposer order,
 * `last_commit` the attestations of the previous block (`{consensus_key, signature}` sorted by key, each an
 * Ed25519 signature of the attestation message over the previous app hash).
 */
import { canonicalBytes, hasExactKeys, isObject, type JsonValue } from "../core/canonical.ts";
import { reject, type Rejection } from "../core/errors.ts";
import { isHex } from "../core/hex.ts";
import { attestationMessage, verifyEd25519 } from "./consensus_key.ts";
import type { LedgerView } from "./state/accessors.ts";
import type { ChainHead } from "./state/store.ts";

/** One validator's signature over an app hash. */
export interface Attestation {
  readonly consensus_key: string;
  readonly signature: string;
}

/** A block as proposed and stored. */
export interface Block {
  readonly chain_id: string;
  readonly height: number;
  readonly time: number;
  readonly prev_app_hash: string;
  readonly last_commit: readonly Attestation[];
  readonly txs: readonly JsonValue[];
}

/** Checks that `value` is a well-formed block following `head` (height, time, previous hash, bound, commit). */
export function checkBlock(
  value: unknown,
  head: ChainHead,
  chainId: string,
  maxBytes: number,
  view: LedgerView,
): { ok: true; block: Block } | Rejection {
  const fail = (m: string) => reject("bad_request", `Cannot accept block ${head.height + 1}: ${m}`);
  if (
    !isObject(value) ||
    !hasExactKeys(value, ["chain_id", "height", "time", "prev_app_hash", "last_commit", "txs"])
  ) {
    return fail("expected exactly chain_id, height, time, prev_app_hash, last_commit, txs");
  }
  const b = value as unknown as Block;
  if (b.chain_id !== chainId) return fail(`chain_id is ${b.chain_id}, expected ${chainId}`);
  if (b.height !== head.height + 1) return fail(`height is ${b.height}, expected ${head.height + 1}`);
  if (!Number.isSafeInteger(b.time) || b.time < head.time) {
    return fail(`time is ${b.time}, before ${head.time}`);
  }
  if (b.prev_app_hash !== head.app_hash) {
    return fail(`prev_app_hash is ${b.prev_app_hash}, expected ${head.app_hash}`);
  }
  if (!Array.isArray(b.txs) || !Array.isArray(b.last_commit)) {
    return fail("txs and last_commit must be arrays");
  }
  const size = canonicalBytes(value).length;
  if (size > maxBytes) return fail(`size is ${size} bytes, bound is ${maxBytes}`);
  const message = attestationMessage(chainId, head.height, head.app_hash);
  let prev = "";
  for (const a of b.last_commit) {
    if (!isObject(a) || !hasExactKeys(a, ["consensus_key", "signature"]) || !isHex(a.consensus_key, 64)) {
      return fail("an attestation is not {consensus_key, signature}");
    }
    if (a.consensus_key <= prev) return fail("last_commit is not sorted by key without repeats");
    prev = a.consensus_key;
    if (view.powerAt(a.consensus_key, head.height) === 0) {
      return fail(`attestation by ${a.consensus_key} who had no power at ${head.height}`);
    }
    if (!verifyEd25519(a.consensus_key, message, a.signature)) {
      return fail(`attestation by ${a.consensus_key} does not verify`);
    }
  }
  return { ok: true, block: b };
}
