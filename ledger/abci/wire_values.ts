/**
 * How our values are spelled on the ABCI wire: a consensus key's CometBFT address (the first 20 bytes of the
 * SHA-256 of the raw Ed25519 public key), block times (protobuf `Timestamp` ↔ integer milliseconds, the
 * sub-millisecond part dropped), app hashes (32 raw bytes ↔ 64 hex) and result codes (0 for success, else
 * 1 + the position of our error code in `core/errors.ts`, which is append-only, under the codespace
 * `neuroshard`).
 */
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { ERROR_CODES, type ErrorCode, isErrorCode } from "../../core/errors.ts";
import { sha256 } from "../../core/digest.ts";
import { fromHex, toHex } from "../../core/hex.ts";

/** The codespace of every non-zero result code. */
export const CODESPACE = "neuroshard";

const CODES = Object.keys(ERROR_CODES) as ErrorCode[];

/** The CometBFT address (40 uppercase hex) of a 64-hex Ed25519 consensus public key. */
export function cometAddress(consensusKey: string): string {
  return toHex(sha256(fromHex(consensusKey)).subarray(0, 20)).toUpperCase();
}

/** Milliseconds since the epoch of a protobuf timestamp (absent counts as 0). */
export function timestampMs(t: Timestamp | undefined): number {
  if (!t) return 0;
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1_000_000);
}

/** The ABCI result code of one of our error codes. */
export function abciCode(code: string): number {
  return isErrorCode(code) ? CODES.indexOf(code) + 1 : CODES.indexOf("internal_error") + 1;
}

/** Our error code of a non-zero ABCI result code, or null for an unknown one. */
export function errorCodeOf(code: number): ErrorCode | null {
  return CODES[code - 1] ?? null;
}

/** 64 hex as 32 raw bytes. */
export function hashBytes(hex: string): Uint8Array {
  return fromHex(hex);
}
