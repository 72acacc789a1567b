/**
 * The app hash chain (PROTOCOL §3): `app_hash[h] = sha256(app_hash[h-1] ‖ sha256(canonical(changes[h])))`
 * where `‖` concatenates the two raw 32-byte digests (64 bytes hashed) and `changes[h]` is the list of
 * `[table, key, value | null]` written by block h, sorted by table then key. The chain starts from the
 * genesis id: `app_hash[0] = sha256(genesis_id ‖ sha256(canonical(changes of initChain)))`.
 */
import { canonicalBytes } from "../../core/canonical.ts";
import { sha256, sha256Hex } from "../../core/digest.ts";
import { fromHex } from "../../core/hex.ts";
import type { Change } from "./overlay.ts";

/** The digest of a block's sorted changes, raw. */
export function changesDigest(changes: readonly Change[]): Uint8Array {
  return sha256(canonicalBytes(changes));
}

/** The next app hash (64 hex) from the previous one (64 hex) and a block's sorted changes. */
export function nextAppHash(prevAppHash: string, changes: readonly Change[]): string {
  const joined = new Uint8Array(64);
  joined.set(fromHex(prevAppHash, "app hash"), 0);
  joined.set(changesDigest(changes), 32);
  return sha256Hex(joined);
}
