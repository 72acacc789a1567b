/**
 * NeuroShard for Deno as a library: canonical encoding, content ids, errors, the object store, account keys
 * and signed envelopes, and typed workflow machines.
 *
 * @example
 * ```ts
 * import { canonical, id } from "./mod.ts";
 * id({ hello: "world" }) === id(JSON.parse(canonical({ hello: "world" })));
 * ```
 */
export * from "./core/canonical.ts";
export * from "./core/digest.ts";
export * from "./core/errors.ts";
export * from "./core/hex.ts";
export * from "./core/hex_float.ts";
export * from "./core/object_store.ts";
export * from "./workflows/machine.ts";
export * from "./ledger/keys.ts";
export * from "./ledger/envelope.ts";
