/**
 * SHA-256 content ids. `id(value)` is the digest of a value's canonical JSON; `sha256Hex(bytes)` addresses
 * binary objects. Both are lowercase hex of 64 characters (PROTOCOL §1).
 *
 * @example
 * ```ts
 * import { id } from "./digest.ts";
 * id({ b: 1, a: [true, null] }); // sha256 of {"a":[true,null],"b":1}
 * ```
 */
import { createHash } from "node:crypto";
import { canonicalBytes, type JsonValue } from "./canonical.ts";

/** SHA-256 of bytes, raw. */
export function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
}

/** SHA-256 of bytes as lowercase hex. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** An incremental SHA-256 for data that arrives in parts. */
export function sha256Stream(): { update(part: Uint8Array): void; hex(): string } {
  const hash = createHash("sha256");
  return {
    update(part) {
      hash.update(part);
    },
    hex: () => hash.digest("hex"),
  };
}

/** The content id of a value: SHA-256 of its canonical JSON bytes. */
export function id(value: JsonValue): string {
  return sha256Hex(canonicalBytes(value));
}
