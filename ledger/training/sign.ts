/**
 * Signatures over canonical JSON values that are not transaction bodies (work receipts, PROTOCOL §5, §12):
 * ECDSA secp256k1 over `sha256(canonical(value))`, deterministic (RFC 6979), low-S, strict DER as lowercase
 * hex — the same rules as a transaction envelope, so one account key signs both.
 *
 * @example
 * ```ts
 * import { signCanonical, verifyCanonical } from "./sign.ts";
 * import { keyFromSeed } from "../keys.ts";
 * const key = keyFromSeed("11".repeat(32));
 * const sig = signCanonical({ hello: "world" }, key);
 * verifyCanonical({ hello: "world" }, key.accountId, sig); // { ok: true }
 * ```
 */
import * as secp from "@noble/secp256k1";
import { createPublicKey, verify as nativeVerify } from "node:crypto";
import { canonicalBytes, type JsonValue } from "../../core/canonical.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { fromHex, isHex, toHex } from "../../core/hex.ts";
import { decodeDer, encodeDer } from "../der.ts";
import { type AccountKey, CURVE_ORDER, isAccountId, publicKeyPem } from "../keys.ts";

const HALF_ORDER = CURVE_ORDER >> 1n;

function big(bytes: Uint8Array): bigint {
  return BigInt("0x" + toHex(bytes));
}

/** Signs `value` with `key`: strict low-S DER hex over `sha256(canonical(value))`. */
export function signCanonical(value: JsonValue, key: AccountKey): string {
  const compact = secp.sign(canonicalBytes(value), key.privateKey, {
    prehash: true,
    lowS: true,
    extraEntropy: false,
  });
  return toHex(encodeDer(big(compact.subarray(0, 32)), big(compact.subarray(32, 64))));
}

/** Verifies a signature made by `signCanonical`; `invalid_signature` (or `invalid_key`) otherwise. */
export function verifyCanonical(
  value: JsonValue,
  publicKey: unknown,
  signature: unknown,
): { ok: true } | Rejection {
  if (!isAccountId(publicKey)) {
    return reject("invalid_key", "Cannot verify signature: public_key is not an account id");
  }
  if (typeof signature !== "string" || !isHex(signature)) {
    return reject("invalid_signature", "Cannot verify signature: signature is not even-length lowercase hex");
  }
  const der = decodeDer(fromHex(signature));
  if (!der.ok) return der;
  const { r, s } = der.value;
  if (r === 0n || r >= CURVE_ORDER || s === 0n || s >= CURVE_ORDER) {
    return reject("invalid_signature", "Cannot verify signature: r or s is outside 1..n-1");
  }
  if (s > HALF_ORDER) return reject("invalid_signature", "Cannot verify signature: signature is high-S");
  const good = nativeVerify(
    "sha256",
    canonicalBytes(value),
    createPublicKey(publicKeyPem(publicKey)),
    fromHex(signature),
  );
  if (!good) {
    return reject("invalid_signature", "Cannot verify signature: it does not match the value and key");
  }
  return { ok: true };
}
