import { assertEquals, assertRejects } from "../_assert.ts";
import { readSecretFile, writeSecretFile } from "../../core/secret_file.ts";
import { ProtocolError } from "../../core/errors.ts";

Deno.test("a secret file is created 0600 with parents, read back without its newline, never overwritten", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/a/b/secret`;
  await writeSecretFile(path, "s3cret", "test secret");
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  assertEquals(await Deno.readTextFile(path), "s3cret\n");
  assertEquals(await readSecretFile(path, "test secret"), "s3cret");
  const e = await assertRejects(
    () => writeSecretFile(path, "other", "test secret"),
    ProtocolError,
    "already exists",
  );
  assertEquals((e as ProtocolError).code, "key_exists");
  assertEquals(await Deno.readTextFile(path), "s3cret\n");
});

Deno.test("a secret file readable by group or others, or missing, is refused without showing its content", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/secret`;
  await writeSecretFile(path, "s3cret", "test secret");
  for (const mode of [0o640, 0o604, 0o660]) {
    await Deno.chmod(path, mode);
    const e = await assertRejects(() => readSecretFile(path, "test secret"), ProtocolError, "expected 0600");
    assertEquals([(e as ProtocolError).code, e.message.includes("s3cret")], ["invalid_key", false]);
  }
  const missing = await assertRejects(() => readSecretFile(`${dir}/none`, "test secret"), ProtocolError);
  assertEquals(missing.message, `Cannot read test secret ${dir}/none: it does not exist`);
});
