/**
 * Account keys (PROTOCOL §2). A seed is 32 random bytes kept as 64 lowercase hex characters in a key file of
 * mode 0600; the secp256k1 private scalar is `sha256(ascii(seed_hex))`, the hash of the hex *text*; the
 * account id is the 33-byte compressed public key as 66 lowercase hex characters.
 *
 * @example
 * ```ts
 * import { createKeyFile, loadKeyFile } from "./keys.ts";
 * await createKeyFile("/tmp/home/account.key");
 * const key = await loadKeyFile("/tmp/home/account.key");
 * console.log(key.accountId); // "02…" or "03…", 66 hex characters
 * ```
 */
import * as secp from "@noble/secp256k1";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { sha256 } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { fromHex, isHex, toHex } from "../core/hex.ts";
import { readSecretFile, writeSecretFile } from "../core/secret_file.ts";

secp.hashes.sha256 = nobleSha256;
secp.hashes.hmacSha256 = (key: Uint8Array, msg: Uint8Array) => hmac(nobleSha256, key, msg);

/** The secp256k1 group order n. */
export const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** An account key pair derived from a seed. The seed and scalar never leave this object except to sign. */
export interface AccountKey {
  /** The 66-hex compressed public key: the account id. */
  readonly accountId: string;
  /** The 33-byte compressed public key. */
  readonly publicKey: Uint8Array;
  /** The 32-byte private scalar (secret). */
  readonly privateKey: Uint8Array;
}

/** Derives the key pair of a 64-hex seed; `invalid_key` for a malformed seed or an out-of-range scalar. */
export function keyFromSeed(seedHex: string): AccountKey {
  if (!isHex(seedHex, 64)) {
    throw new ProtocolError(
      "invalid_key",
      `Cannot use seed: expected 64 lowercase hex characters, got ${String(seedHex).length}`,
    );
  }
  return keyFromScalar(sha256(new TextEncoder().encode(seedHex)));
}

/** The key pair of a 32-byte private scalar; `invalid_key` when it is 0 or not below the curve order. */
export function keyFromScalar(privateKey: Uint8Array): AccountKey {
  const scalar = privateKey.length === 32 ? BigInt("0x" + toHex(privateKey)) : 0n;
  if (scalar === 0n || scalar >= CURVE_ORDER) {
    throw new ProtocolError("invalid_key", "Cannot use seed: its scalar is 0 or not below the curve order");
  }
  const publicKey = secp.getPublicKey(privateKey, true);
  return { accountId: toHex(publicKey), publicKey, privateKey };
}

/** A fresh random seed as 64 lowercase hex characters. */
export function newSeed(): string {
  for (;;) {
    const seed = toHex(crypto.getRandomValues(new Uint8Array(32)));
    try {
      keyFromSeed(seed);
      return seed;
    } catch {
      // A scalar out of range has probability ~2^-128; draw again.
    }
  }
}

/**
 * Writes a new seed to `path` with mode 0600 and returns its key. Refuses to overwrite an existing file
 * (`key_exists`); creates missing parent directories.
 */
export async function createKeyFile(path: string, seedHex: string = newSeed()): Promise<AccountKey> {
  const key = keyFromSeed(seedHex);
  await writeSecretFile(path, seedHex, "key file");
  return key;
}

/**
 * Reads a key file: exactly 64 lowercase hex characters and an optional final newline, mode 0600 (no group
 * or other bits). `invalid_key` otherwise, naming what is wrong but never the seed.
 */
export async function loadKeyFile(path: string): Promise<AccountKey> {
  const seed = await readSecretFile(path, "key file");
  if (!isHex(seed, 64)) {
    throw new ProtocolError(
      "invalid_key",
      `Cannot use key file ${path}: expected 64 lowercase hex characters`,
    );
  }
  return keyFromSeed(seed);
}

/** Parses a 66-hex compressed public key into bytes; `invalid_key` when it is not a point on the curve. */
export function parseAccountId(accountId: unknown): Uint8Array {
  if (!isHex(accountId, 66)) {
    throw new ProtocolError("invalid_key", "Cannot use public key: expected 66 lowercase hex characters");
  }
  const bytes = fromHex(accountId);
  if (bytes[0] !== 2 && bytes[0] !== 3) {
    throw new ProtocolError("invalid_key", "Cannot use public key: not a compressed point (02 or 03 prefix)");
  }
  try {
    secp.Point.fromBytes(bytes).assertValidity();
  } catch {
    throw new ProtocolError("invalid_key", `Cannot use public key ${accountId}: not a point on secp256k1`);
  }
  return bytes;
}

/** True when `accountId` is a valid 66-hex compressed secp256k1 public key. */
export function isAccountId(accountId: unknown): accountId is string {
  try {
    parseAccountId(accountId);
    return true;
  } catch {
    return false;
  }
}

/** DER prefix of a SubjectPublicKeyInfo for a compressed secp256k1 point (id-ecPublicKey, secp256k1). */
const SPKI_PREFIX = "3036301006072a8648ce3d020106052b8104000a032200";

/** The account's public key as a PEM SubjectPublicKeyInfo, for independent tools such as `openssl`. */
export function publicKeyPem(accountId: string): string {
  const der = fromHex(SPKI_PREFIX + toHex(parseAccountId(accountId)));
  const b64 = btoa(String.fromCharCode(...der));
  return `-----BEGIN PUBLIC KEY-----\n${b64.match(/.{1,64}/g)!.join("\n")}\n-----END PUBLIC KEY-----\n`;
}
