/**
 * Foundation throughput: canonical encoding MB/s, signatures per second, verifications per second.
 * Run with `deno task bench` (all suites) or `deno bench bench/encoding_bench.ts`.
 */
import { canonicalBytes, decodeCanonical } from "../core/canonical.ts";
import { keyFromSeed } from "../ledger/keys.ts";
import { signBody, verifyEnvelope } from "../ledger/envelope.ts";

// A document of ~1 MB: nested objects, non-ASCII text and integers, the shapes transactions carry.
const doc = {
  entries: Array.from({ length: 4000 }, (_, i) => ({
    id: i,
    name: `entrée-${i}-ünïcødé-文字`,
    values: [i, i * 3, -i, 9_007_199_254_740_991 - i],
    nested: { ok: i % 2 === 0, note: 'a fairly ordinary line of text with "quotes" and \\ slashes' },
  })),
};
const bytes = canonicalBytes(doc);
const mb = bytes.length / 1e6;
console.log(`canonical document: ${bytes.length} bytes`);

Deno.bench(`canonical encode (${mb.toFixed(2)} MB)`, { group: "encoding" }, () => {
  canonicalBytes(doc);
});
Deno.bench(`canonical strict decode (${mb.toFixed(2)} MB)`, { group: "encoding" }, () => {
  decodeCanonical(bytes);
});

const key = keyFromSeed("11".repeat(32));
const body = {
  kind: "transfer",
  chain_id: "neuroshard-devnet",
  nonce: 0,
  to: key.accountId,
  amount: 1_000_000,
};
const envelope = signBody(body, key);
let nonce = 0;
Deno.bench("sign a transfer", { group: "signatures" }, () => {
  signBody({ ...body, nonce: nonce++ }, key);
});
Deno.bench("verify a transfer", { group: "signatures" }, () => {
  if (!verifyEnvelope(envelope).ok) throw new Error("verify failed");
});
