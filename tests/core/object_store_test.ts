import { assertEquals, assertRejects } from "../_assert.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { ProtocolError } from "../../core/errors.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { seededRandom } from "../_seeded.ts";

const enc = new TextEncoder();

async function tempStore(maxBytes?: number): Promise<ObjectStore> {
  const dir = await Deno.makeTempDir({ prefix: "neuro-objects-" });
  return new ObjectStore(`${dir}/objects`, maxBytes);
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  const e = await assertRejects(() => p, ProtocolError);
  return (e as ProtocolError).code;
}

Deno.test("content ids are sha256 of canonical bytes", () => {
  assertEquals(sha256Hex(enc.encode("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assertEquals(id({ b: 1, a: [true, null] }), sha256Hex(enc.encode('{"a":[true,null],"b":1}')));
});

Deno.test("an object is stored at objects/<2 hex>/<62 hex> and read back", async () => {
  const store = await tempStore();
  const root = await store.put(enc.encode("hello"));
  assertEquals(root, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
  const onDisk = await Deno.readFile(
    `${store.dir}/2c/f24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824`,
  );
  assertEquals(new TextDecoder().decode(onDisk), "hello");
  assertEquals(new TextDecoder().decode(await store.get(root)), "hello");
  assertEquals(await store.has(root), true);
  const leftovers = [...Deno.readDirSync(`${store.dir}/2c`)].map((e) => e.name);
  assertEquals(leftovers, ["f24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"]);
});

Deno.test("a read re-hashes and refuses corrupted bytes", async () => {
  const store = await tempStore();
  const root = await store.put(enc.encode("payload"));
  await Deno.writeFile(store.pathOf(root), enc.encode("tampered"));
  assertEquals(await codeOf(store.get(root)), "object_corrupt");
});

Deno.test("a missing object and a malformed root are clear errors", async () => {
  const store = await tempStore();
  assertEquals(await codeOf(store.get("ab".repeat(32))), "object_not_found");
  assertEquals(await codeOf(store.get("AB".repeat(32))), "invalid_hex");
  assertEquals(await store.has("ab".repeat(32)), false);
});

Deno.test("objects above the size bound are refused and nothing is written", async () => {
  const store = await tempStore(4);
  assertEquals(await codeOf(store.put(enc.encode("12345"))), "too_large");
  assertEquals(await store.has(sha256Hex(enc.encode("12345"))), false);
  await store.put(enc.encode("1234"));
});

Deno.test("putExpected refuses bytes that do not hash to the expected root", async () => {
  const store = await tempStore();
  const wrong = sha256Hex(enc.encode("other"));
  assertEquals(await codeOf(store.putExpected(wrong, enc.encode("mine"))), "object_corrupt");
  assertEquals(await store.has(wrong), false);
});

Deno.test("concurrent writers of the same object leave one intact copy and no temp files", async () => {
  const store = await tempStore();
  const bytes = seededRandom(7).bytes(200_000);
  const roots = await Promise.all(Array.from({ length: 16 }, () => store.put(bytes)));
  assertEquals(new Set(roots).size, 1);
  assertEquals(await store.get(roots[0]!), bytes);
  const names = [...Deno.readDirSync(`${store.dir}/${roots[0]!.slice(0, 2)}`)].map((e) => e.name);
  assertEquals(names, [roots[0]!.slice(2)]);
});

Deno.test("putMany stores every object (duplicates and stored ones once) and leaves no temp files", async () => {
  const store = await tempStore();
  const blobs = Array.from({ length: 40 }, (_, i) => enc.encode(`object ${i}`));
  const before = await store.put(blobs[3]!);
  const entries = [...blobs, blobs[5]!].map((b) => [sha256Hex(b), b] as const);
  await store.putMany(entries);
  for (const b of blobs) assertEquals(await store.get(sha256Hex(b)), b);
  assertEquals(before, sha256Hex(blobs[3]!));
  const files: string[] = [];
  for (const d of Deno.readDirSync(store.dir)) {
    for (const f of Deno.readDirSync(`${store.dir}/${d.name}`)) files.push(`${d.name}${f.name}`);
  }
  assertEquals(files.sort(), blobs.map((b) => sha256Hex(b)).sort());
  await store.putMany([]);
});

Deno.test("putMany refuses a batch with one object that does not hash to its root and writes none of it", async () => {
  const store = await tempStore();
  const good = enc.encode("good");
  const wrong = sha256Hex(enc.encode("other"));
  const batch = [[sha256Hex(good), good], [wrong, enc.encode("mine")]] as const;
  assertEquals(await codeOf(store.putMany(batch)), "object_corrupt");
  assertEquals([await store.has(sha256Hex(good)), await store.has(wrong)], [false, false]);
  const small = await tempStore(4);
  assertEquals(await codeOf(small.putMany([[sha256Hex(good), enc.encode("too large")]])), "too_large");
});
