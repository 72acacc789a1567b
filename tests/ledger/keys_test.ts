import { assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import {
  createKeyFile,
  CURVE_ORDER,
  isAccountId,
  keyFromScalar,
  keyFromSeed,
  loadKeyFile,
  parseAccountId,
  publicKeyPem,
} from "../../ledger/keys.ts";
import { ProtocolError } from "../../core/errors.ts";
import { fromHex } from "../../core/hex.ts";

const SEED = "11".repeat(32);

async function codeOf(p: Promise<unknown>): Promise<string> {
  return ((await assertRejects(() => p, ProtocolError)) as ProtocolError).code;
}

Deno.test("the private scalar is sha256 of the seed's hex text and the id is the compressed key", () => {
  const key = keyFromSeed(SEED);
  // Both values computed independently: `printf '%s' 1111…11 | sha256sum` and Python's `cryptography`
  // (ec.derive_private_key(d, SECP256K1()) -> X962 compressed point).
  assertEquals(
    [...key.privateKey].map((b) => b.toString(16).padStart(2, "0")).join(""),
    "3138bb9bc78df27c473ecfd1410f7bd45ebac1f59cf3ff9cfe4db77aab7aedd3",
  );
  assertEquals(key.accountId, "0331e3a5537857ba310ab87ae5360e136b12f7e5804faa71c2f11a619b6ddca85b");
  assertEquals(key.accountId.length, 66);
});

Deno.test("malformed seeds and out-of-range scalars are refused", () => {
  for (const seed of ["11".repeat(31), "11".repeat(33), "AB".repeat(32), "zz".repeat(32), ""]) {
    assertEquals((assertThrows(() => keyFromSeed(seed), ProtocolError) as ProtocolError).code, "invalid_key");
  }
  assertThrows(() => keyFromScalar(new Uint8Array(32)), ProtocolError, "scalar is 0");
  assertThrows(() => keyFromScalar(fromHex(CURVE_ORDER.toString(16))), ProtocolError, "curve order");
  assertEquals(keyFromScalar(fromHex((CURVE_ORDER - 1n).toString(16))).accountId.length, 66);
});

Deno.test("a key file is created with mode 0600 and never overwritten", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/home/account.key`;
  const key = await createKeyFile(path, SEED);
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  assertEquals(await Deno.readTextFile(path), SEED + "\n");
  assertEquals((await loadKeyFile(path)).accountId, key.accountId);
  assertEquals(await codeOf(createKeyFile(path)), "key_exists");
  assertEquals(await Deno.readTextFile(path), SEED + "\n");
});

Deno.test("a key file with group or other permissions, bad content or no file is refused", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/account.key`;
  await createKeyFile(path, SEED);
  await Deno.chmod(path, 0o644);
  const e = await assertRejects(() => loadKeyFile(path), ProtocolError, "mode is 0644");
  assertEquals((e as ProtocolError).code, "invalid_key");
  assertEquals(e.message.includes(SEED), false); // never the secret
  await Deno.chmod(path, 0o600);
  await Deno.writeTextFile(path, "AB".repeat(32));
  assertEquals(await codeOf(loadKeyFile(path)), "invalid_key");
  await Deno.writeTextFile(path, SEED + "\n\n");
  assertEquals(await codeOf(loadKeyFile(path)), "invalid_key");
  assertEquals(await codeOf(loadKeyFile(`${dir}/missing.key`)), "invalid_key");
});

Deno.test("account ids must be 66 lowercase hex of a compressed curve point", () => {
  const id = keyFromSeed(SEED).accountId;
  assertEquals(isAccountId(id), true);
  assertEquals(isAccountId(id.toUpperCase()), false);
  assertEquals(isAccountId(id.slice(0, 64)), false);
  assertEquals(isAccountId("04" + id.slice(2)), false);
  assertEquals(isAccountId("02" + "ff".repeat(32)), false); // x not on the curve
  assertThrows(() => parseAccountId(42), ProtocolError);
});

Deno.test("the PEM export is a SubjectPublicKeyInfo openssl can read", async () => {
  const pem = publicKeyPem(keyFromSeed(SEED).accountId);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/pub.pem`, pem);
  const out = await new Deno.Command("openssl", {
    args: ["ec", "-pubin", "-in", `${dir}/pub.pem`, "-text", "-noout"],
  })
    .output();
  const text = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  assertEquals(text.includes("secp256k1"), true);
  assertEquals(
    text.replace(/[\s:]/g, "").includes("0331e3a5537857ba310ab87ae5360e136b12f7e5804faa71c2f11a619b6ddca85b"),
    true,
  );
});
