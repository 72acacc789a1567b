import { assertEquals } from "../_assert.ts";
import { CURVE_ORDER, keyFromSeed, publicKeyPem } from "../../ledger/keys.ts";
import {
  decodeEnvelope,
  type Envelope,
  envelopeBytes,
  rawHash,
  signBody,
  txid,
  verifyEnvelope,
  verifyWithNoble,
} from "../../ledger/envelope.ts";
import { decodeDer, encodeDer } from "../../ledger/der.ts";
import { canonical, canonicalBytes } from "../../core/canonical.ts";
import { fromHex, toHex } from "../../core/hex.ts";
import { id, sha256Hex } from "../../core/digest.ts";

const key = keyFromSeed("11".repeat(32));
const other = keyFromSeed("22".repeat(32));
const body = {
  kind: "transfer",
  chain_id: "neuroshard-devnet",
  nonce: 0,
  to: other.accountId,
  amount: 5_000_000,
};

function codeOf(value: unknown): string {
  const r = verifyEnvelope(value);
  return r.ok ? "ok" : r.code;
}

function withS(env: Envelope, f: (r: bigint, s: bigint) => [bigint, bigint]): Envelope {
  const d = decodeDer(fromHex(env.signature));
  if (!d.ok) throw new Error(d.message);
  const [r, s] = f(d.value.r, d.value.s);
  return { ...env, signature: toHex(encodeDer(r, s)) };
}

Deno.test("signing is deterministic and the envelope verifies", () => {
  const a = signBody(body, key);
  const b = signBody({ ...body }, key);
  assertEquals(canonical(a), canonical(b));
  assertEquals(Object.keys(a).sort(), ["body", "public_key", "signature"]);
  const v = verifyEnvelope(a);
  assertEquals(v.ok && v.value.sender, key.accountId);
  assertEquals(v.ok && v.value.txid, id({ body, public_key: key.accountId }));
});

Deno.test("txid excludes the signature and the raw hash covers the exact bytes", () => {
  const env = signBody(body, key);
  assertEquals(txid(env), id({ body: env.body, public_key: env.public_key }));
  assertEquals(rawHash(envelopeBytes(env)), sha256Hex(canonicalBytes(env)));
});

Deno.test("a signature is low-S and strict DER", () => {
  for (let nonce = 0; nonce < 32; nonce++) {
    const env = signBody({ ...body, nonce }, key);
    const d = decodeDer(fromHex(env.signature));
    assertEquals(d.ok && d.value.s <= CURVE_ORDER >> 1n, true);
    assertEquals(d.ok && toHex(encodeDer(d.value.r, d.value.s)), env.signature);
  }
});

Deno.test("high-S is rejected", () => {
  const env = withS(signBody(body, key), (r, s) => [r, CURVE_ORDER - s]);
  assertEquals(codeOf(env), "invalid_signature");
});

Deno.test("non-strict DER is rejected", () => {
  const good = signBody(body, key).signature;
  const bytes = fromHex(good);
  const variants: Uint8Array[] = [];
  // A superfluous leading zero on r.
  const rLen = bytes[3]!;
  const r = bytes.subarray(4, 4 + rLen);
  const rest = bytes.subarray(4 + rLen);
  variants.push(new Uint8Array([0x30, bytes[1]! + 1, 0x02, rLen + 1, 0, ...r, ...rest]));
  variants.push(new Uint8Array([...bytes, 0x00])); // trailing byte
  variants.push(new Uint8Array([0x30, bytes[1]! + 1, ...bytes.subarray(2)])); // wrong sequence length
  variants.push(new Uint8Array([0x31, ...bytes.subarray(1)])); // not a sequence
  variants.push(new Uint8Array([0x30, 0x81, bytes[1]!, ...bytes.subarray(2)])); // long-form length
  for (const v of variants) {
    assertEquals(codeOf({ ...signBody(body, key), signature: toHex(v) }), "invalid_signature");
  }
});

Deno.test("signature hex must be lowercase and of even length", () => {
  const env = signBody(body, key);
  assertEquals(codeOf({ ...env, signature: env.signature.toUpperCase() }), "invalid_signature");
  assertEquals(codeOf({ ...env, signature: env.signature.slice(1) }), "invalid_signature");
  assertEquals(codeOf({ ...env, signature: 7 }), "invalid_signature");
});

Deno.test("a tampered body, another key or a wrong key length fails", () => {
  const env = signBody(body, key);
  assertEquals(codeOf({ ...env, body: { ...body, amount: 5_000_001 } }), "invalid_signature");
  assertEquals(codeOf({ ...env, public_key: other.accountId }), "invalid_signature");
  assertEquals(codeOf({ ...env, public_key: env.public_key.slice(0, 64) }), "invalid_key");
  assertEquals(codeOf({ ...env, public_key: env.public_key.toUpperCase() }), "invalid_key");
  assertEquals(codeOf({ ...env, public_key: "04" + env.public_key.slice(2) }), "invalid_key");
});

Deno.test("envelopes need exactly body, public_key and signature", () => {
  const env = signBody(body, key);
  assertEquals(codeOf({ ...env, extra: 1 }), "invalid_envelope");
  const { signature: _s, ...noSig } = env;
  assertEquals(codeOf(noSig), "invalid_envelope");
  assertEquals(codeOf([env]), "invalid_envelope");
  assertEquals(codeOf(null), "invalid_envelope");
});

Deno.test("bodies need kind, chain_id and a non-negative integer nonce", () => {
  for (const field of ["kind", "chain_id", "nonce"]) {
    const partial: Record<string, unknown> = { ...body };
    delete partial[field];
    assertEquals(codeOf({ ...signBody(body, key), body: partial }), "invalid_body", field);
  }
  assertEquals(codeOf({ ...signBody(body, key), body: { ...body, nonce: -1 } }), "invalid_body");
  assertEquals(codeOf({ ...signBody(body, key), body: { ...body, kind: "" } }), "invalid_body");
  assertEquals(codeOf({ ...signBody(body, key), body: "transfer" }), "invalid_body");
});

Deno.test("decodeEnvelope refuses non-canonical bytes and oversize input", () => {
  const env = signBody(body, key);
  const raw = envelopeBytes(env);
  const good = decodeEnvelope(raw);
  assertEquals(good.ok, true);
  const spaced = new TextEncoder().encode(JSON.stringify(env, null, 1));
  const r1 = decodeEnvelope(spaced);
  assertEquals(!r1.ok && r1.code, "non_canonical");
  const r2 = decodeEnvelope(new Uint8Array(2 * 1024 * 1024 + 1));
  assertEquals(!r2.ok && r2.code, "too_large");
  const r3 = decodeEnvelope(new TextEncoder().encode('{"body":{},"body":{}}'));
  assertEquals(!r3.ok && r3.code, "duplicate_key");
});

async function opensslVerify(pem: string, message: Uint8Array, der: Uint8Array): Promise<boolean> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/pub.pem`, pem);
  await Deno.writeFile(`${dir}/msg`, message);
  await Deno.writeFile(`${dir}/sig`, der);
  const out = await new Deno.Command("openssl", {
    args: ["dgst", "-sha256", "-verify", `${dir}/pub.pem`, "-signature", `${dir}/sig`, `${dir}/msg`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(dir, { recursive: true });
  return out.code === 0 && new TextDecoder().decode(out.stdout).includes("Verified OK");
}

Deno.test("openssl verifies our signatures; it accepts a high-S twin that we reject", async () => {
  const pem = publicKeyPem(key.accountId);
  for (let nonce = 0; nonce < 4; nonce++) {
    const env = signBody({ ...body, nonce }, key);
    assertEquals(await opensslVerify(pem, canonicalBytes(env.body), fromHex(env.signature)), true);
    const high = withS(env, (r, s) => [r, CURVE_ORDER - s]);
    assertEquals(await opensslVerify(pem, canonicalBytes(env.body), fromHex(high.signature)), true);
    assertEquals(codeOf(high), "invalid_signature");
  }
  const env = signBody(body, key);
  const tampered = canonicalBytes({ ...body, amount: 1 });
  assertEquals(await opensslVerify(pem, tampered, fromHex(env.signature)), false);
});

Deno.test("the native verifier agrees with the pure-JS verifier on 200 random and tampered envelopes", () => {
  for (let i = 0; i < 200; i++) {
    const signer = keyFromSeed(i.toString(16).padStart(2, "0").repeat(32));
    const env = signBody({ ...body, nonce: i, amount: i * 7 + 1 }, signer);
    const variants: Envelope[] = [env, { ...env, body: { ...env.body, amount: i * 7 + 2 } }, {
      ...env,
      public_key: key.accountId,
    }];
    for (const v of variants) {
      assertEquals(verifyEnvelope(v).ok, verifyWithNoble(v), `seed ${i}`);
    }
    assertEquals(verifyEnvelope(env).ok, true);
  }
});
