/**
 * Ed25519 consensus keys (PROTOCOL §4). A consensus key signs app hashes (attestations) and proves possession
 * when it is bonded. The public key is the 32-byte raw key as 64 lowercase hex characters; the secret is a
 * 32-byte seed kept as 64 hex characters in a key file of mode 0600.
 *
 * @example
 * ```ts
 * import { consensusKeyFromSeed, signEd25519, verifyEd25519 } from "./consensus_key.ts";
 * const key = consensusKeyFromSeed("07".repeat(32));
 * const sig = signEd25519(key, new TextEncoder().encode("hello"));
 * verifyEd25519(key.publicKey, new TextEncoder().encode("hello"), sig); // true
 * ```
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import { Buffer } from "node:buffer";
import { canonicalBytes } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { readSecretFile, writeSecretFile } from "../core/secret_file.ts";
import { fromHex, isHex, toHex } from "../core/hex.ts";

const PKCS8_PREFIX = fromHex("302e020100300506032b657004220420");
const SPKI_PREFIX = fromHex("302a300506032b6570032100");

/** An Ed25519 consensus key pair. */
export interface ConsensusKey {
  /** The raw 32-byte public key as 64 lowercase hex characters. */
  readonly publicKey: string;
  /** The private key object (never serialised except as the seed file). */
  readonly privateKey: KeyObject;
}

/** Derives the consensus key of a 64-hex seed; `invalid_key` for a malformed seed. */
export function consensusKeyFromSeed(seedHex: string): ConsensusKey {
  if (!isHex(seedHex, 64)) {
    throw new ProtocolError("invalid_key", "Cannot use consensus seed: expected 64 lowercase hex characters");
  }
  const der = Buffer.concat([PKCS8_PREFIX, fromHex(seedHex)]);
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" }) as Uint8Array;
  return { publicKey: toHex(new Uint8Array(spki).subarray(SPKI_PREFIX.length)), privateKey };
}

/** A fresh random consensus seed as 64 lowercase hex characters. */
export function newConsensusSeed(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(32)));
}

/** Signs `message` and returns the 64-byte signature as 128 lowercase hex characters. */
export function signEd25519(key: ConsensusKey, message: Uint8Array): string {
  return toHex(new Uint8Array(sign(null, message, key.privateKey)));
}

const publicKeys = new Map<string, KeyObject>();

function publicKeyObject(publicKey: string): KeyObject | undefined {
  let obj = publicKeys.get(publicKey);
  if (obj) return obj;
  try {
    obj = createPublicKey({
      key: Buffer.concat([SPKI_PREFIX, fromHex(publicKey)]),
      format: "der",
      type: "spki",
    });
  } catch {
    return undefined;
  }
  if (publicKeys.size > 10_000) publicKeys.clear();
  publicKeys.set(publicKey, obj);
  return obj;
}

/** True when `signature` (128 hex) is a valid Ed25519 signature of `message` by `publicKey` (64 hex). */
export function verifyEd25519(publicKey: unknown, message: Uint8Array, signature: unknown): boolean {
  if (!isConsensusPublicKey(publicKey) || !isHex(signature, 128)) return false;
  const obj = publicKeyObject(publicKey);
  if (!obj) return false;
  try {
    return verify(null, message, obj, fromHex(signature));
  } catch {
    return false;
  }
}

/** True when `value` is 64 lowercase hex characters (the spelling of a consensus public key). */
export function isConsensusPublicKey(value: unknown): value is string {
  return isHex(value, 64);
}

/** The message a possession proof signs (PROTOCOL §4). */
export function possessionMessage(
  fields: { chain_id: string; owner: string; consensus_key: string; amount: number; nonce: number },
): Uint8Array {
  return canonicalBytes({ domain: "neuroshard/validator-bond/v1", ...fields });
}

/** The message an attestation signs: a validator commits block `height` by signing its app hash. */
export function attestationMessage(chainId: string, height: number, appHash: string): Uint8Array {
  return canonicalBytes({ domain: "neuroshard/attest/v1", chain_id: chainId, height, app_hash: appHash });
}

/** Writes a new consensus seed to `path` (mode 0600, never overwriting) and returns its key. */
export async function createConsensusKeyFile(
  path: string,
  seedHex = newConsensusSeed(),
): Promise<ConsensusKey> {
  const key = consensusKeyFromSeed(seedHex);
  await writeSecretFile(path, seedHex, "consensus key file");
  return key;
}

/** Reads a consensus key file (64 hex, optional newline, mode 0600); `invalid_key` otherwise. */
export async function loadConsensusKeyFile(path: string): Promise<ConsensusKey> {
  return consensusKeyFromSeed(await readSecretFile(path, "consensus key file"));
}
