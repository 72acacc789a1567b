import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { SignatureCache } from "../../ledger/signature_cache.ts";
import type { VerifiedEnvelope } from "../../ledger/envelope.ts";

const fake = (n: number) => ({ txid: String(n), sender: "s" }) as unknown as VerifiedEnvelope;

Deno.test("the signature cache is bounded by bytes and evicts the least recently used first", () => {
  const cache = new SignatureCache(100);
  cache.set("a", fake(1), 40);
  cache.set("b", fake(2), 40);
  cache.get("a");
  cache.set("c", fake(3), 40);
  assertEquals([cache.get("a")?.txid, cache.get("b"), cache.get("c")?.txid], ["1", undefined, "3"]);
  assertEquals([cache.size, cache.bytes], [2, 80]);
  cache.set("huge", fake(4), 101);
  assertEquals([cache.size, cache.bytes, cache.get("huge")], [2, 80, undefined]);
  cache.delete("a");
  assertEquals([cache.size, cache.bytes], [1, 40]);
});
