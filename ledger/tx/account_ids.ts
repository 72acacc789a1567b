/**
 * Checking that a string is an account id means decompressing a secp256k1 point, which costs a modular
 * square root. Transfers name the same few recipients again and again, so the answers are memoised
 * (bounded); the answer for a given string never changes, so the cache cannot affect consensus.
 */
import { isAccountId } from "../keys.ts";

const LIMIT = 100_000;
const known = new Map<string, boolean>();

/** `isAccountId`, memoised. */
export function isAccountIdCached(value: unknown): value is string {
  if (typeof value !== "string") return false;
  const hit = known.get(value);
  if (hit !== undefined) return hit;
  const ok = isAccountId(value);
  if (known.size >= LIMIT) known.clear();
  known.set(value, ok);
  return ok;
}
