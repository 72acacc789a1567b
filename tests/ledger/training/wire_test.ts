import assert from "node:assert/strict";
import { canonical } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { keyFromSeed } from "../../../ledger/keys.ts";
import {
  decodeBase64Strict,
  keyedById,
  receiptBody,
  signReceipt,
  uploadChunks,
  verifyReceipt,
} from "../../../ledger/training/wire.ts";

const key = keyFromSeed("11".repeat(32));
const body = receiptBody("neuroshard-devnet", "a".repeat(64), "b".repeat(64), 1, "c".repeat(64));

Deno.test("a receipt signed by a worker verifies and signing again gives the same bytes", () => {
  const r = signReceipt(body, key);
  assert.equal(canonical(signReceipt(body, key)), canonical(r));
  assert.deepEqual(verifyReceipt(r), { ok: true, value: r });
  assert.equal(r.public_key, key.accountId);
});

Deno.test("a receipt whose body was changed after signing is invalid_receipt", () => {
  const r = signReceipt(body, key);
  const v = verifyReceipt({ ...r, receipt: { ...r.receipt, stage: 2 } });
  assert.equal(v.ok, false);
  assert.equal(!v.ok && v.code, "invalid_receipt");
  const other = keyFromSeed("22".repeat(32));
  const w = verifyReceipt({ ...r, public_key: other.accountId });
  assert.equal(!w.ok && w.code, "invalid_receipt");
  const d = verifyReceipt({ ...r, receipt: { ...r.receipt, domain: "neuroshard/other" } });
  assert.equal(!d.ok && d.code, "invalid_receipt");
});

Deno.test("metadata keys are the ids of their values", () => {
  const m = keyedById([{ a: 1 }, [1, 2]]);
  assert.deepEqual(Object.keys(m).sort(), [id({ a: 1 }), id([1, 2])].sort());
});

Deno.test("objects are cut into 1 MiB strict base64 chunks and decode back", () => {
  const bytes = new Uint8Array(1024 * 1024 + 3).map((_, i) => i & 255);
  const chunks = uploadChunks(bytes);
  assert.equal(chunks.length, 2);
  assert.equal(decodeBase64Strict(chunks[0])!.length, 1024 * 1024);
  assert.deepEqual(decodeBase64Strict(chunks[1]), new Uint8Array([0, 1, 2]));
  assert.equal(decodeBase64Strict("AAE"), null); // unpadded
  assert.equal(decodeBase64Strict("AAF="), null); // non-zero padding bits
  assert.equal(decodeBase64Strict(""), null);
  assert.equal(decodeBase64Strict("AA-_"), null); // url alphabet
});
