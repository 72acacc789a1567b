/**
 * Bearer tokens for loopback HTTP between actors (PROTOCOL §12): at least 32 random bytes in lowercase hex,
 * kept in a file of mode 0600. A missing file is created with a fresh token; a file readable by group or
 * others, or holding a short or malformed token, is refused. Tokens are compared in constant time.
 *
 * @example
 * ```ts
 * import { loadToken, tokensEqual } from "./token.ts";
 * const token = await loadToken("/tmp/home/http.token");
 * tokensEqual(token, token); // true
 * ```
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ProtocolError } from "../../core/errors.ts";
import { toHex } from "../../core/hex.ts";
import { MIN_TOKEN_BYTES } from "../../core/limits.ts";
import { readSecretFile, writeSecretFile } from "../../core/secret_file.ts";

/** Reads the token in `path`, creating the file (mode 0600, a fresh 32-byte token) when it does not exist. */
export async function loadToken(path: string, options: { readonly create?: boolean } = {}): Promise<string> {
  let token: string;
  try {
    token = await readSecretFile(path, "token file");
  } catch (e) {
    const missing = e instanceof ProtocolError && e.message.endsWith("it does not exist");
    if (!missing || options.create === false) throw e;
    token = toHex(crypto.getRandomValues(new Uint8Array(MIN_TOKEN_BYTES)));
    try {
      await writeSecretFile(path, token, "token file");
    } catch (e2) {
      if (!(e2 instanceof ProtocolError && e2.code === "key_exists")) throw e2;
      return loadToken(path, { create: false }); // another process created it first
    }
    return token;
  }
  token = token.trim();
  if (!/^(?:[0-9a-f]{2})+$/.test(token) || token.length < 2 * MIN_TOKEN_BYTES) {
    throw new ProtocolError(
      "invalid_key",
      `Cannot use token file ${path}: the token is ${token.length} characters, expected at least ` +
        `${2 * MIN_TOKEN_BYTES} lowercase hex characters`,
    );
  }
  return token;
}

/** Compares two tokens in time independent of where they differ (both are hashed to equal-length digests). */
export function tokensEqual(a: string, b: string): boolean {
  const da = createHash("sha256").update(a).digest();
  const db = createHash("sha256").update(b).digest();
  return timingSafeEqual(da, db);
}
