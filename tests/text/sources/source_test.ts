/**
 * Pinned sources: the SHA-256 is checked before any row is parsed, JSON Lines and Parquet (written with
 * `hyparquet-writer`) read to the same rows, row ranges and malformed files fail with their codes, and the
 * spec is strict.
 */
import { sha256Hex } from "../../../core/digest.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { openSource } from "../../../text/sources/source.ts";
import { parseSourceSpec, pinnedPart, type SourceSpec } from "../../../text/sources/spec.ts";
import { jsonlBytes, parquetBytes } from "../../../text/sources/write.ts";
import { assertEquals, assertRejects, assertThrows } from "../../_assert.ts";
import { tempDir } from "../../actors/runtime/_temp.ts";
import { chatRows } from "./_rows.ts";

const base = {
  name: "test/chat",
  revision: "r1",
  split: "train",
  license: "cc0-1.0",
  role: "train",
} as const;

async function written(name: string, bytes: Uint8Array, format: "jsonl" | "parquet", sha = sha256Hex(bytes)) {
  const path = `${tempDir("sources-")}/${name}`;
  await Deno.writeFile(path, bytes);
  return { path, spec: parseSourceSpec({ ...base, format, sha256: sha }) as SourceSpec };
}

async function code(p: Promise<unknown>): Promise<string> {
  const e = await assertRejects(() => p, ProtocolError);
  return (e as ProtocolError).code;
}

Deno.test("JSON Lines and Parquet of the same rows read to the same messages, in any range", async () => {
  const rows = chatRows(37);
  const j = await written("a.jsonl", jsonlBytes(rows), "jsonl");
  const p = await written("a.parquet", parquetBytes(rows, 10), "parquet"); // 4 row groups
  const js = await openSource(j.spec, j.path);
  const ps = await openSource(p.spec, p.path);
  assertEquals([js.count, ps.count], [37, 37]);
  assertEquals(await js.read(0, 37), rows);
  assertEquals(await ps.read(0, 37), rows);
  assertEquals(await ps.read(8, 23), rows.slice(8, 23)); // across row groups
  assertEquals(await js.read(8, 23), rows.slice(8, 23));
  assertEquals(await ps.read(5, 5), []);
});

Deno.test("a file whose SHA-256 differs from its spec is refused before any row is read", async () => {
  // The bytes are not even JSON: had a row been parsed, the error would be invalid_source.
  const bad = new TextEncoder().encode("not json at all\n");
  const j = await written("x.jsonl", bad, "jsonl", "00".repeat(32));
  const e = await assertRejects(() => openSource(j.spec, j.path), ProtocolError);
  assertEquals((e as ProtocolError).code, "source_mismatch");
  assertEquals(e.message.includes(sha256Hex(bad)), true);
  const p = await written("x.parquet", parquetBytes(chatRows(3)), "parquet", "11".repeat(32));
  assertEquals(await code(openSource(p.spec, p.path)), "source_mismatch");
  // One flipped byte of a pinned file.
  const good = jsonlBytes(chatRows(3));
  const flipped = good.slice();
  flipped[10] = flipped[10]! ^ 1;
  const f = await written("f.jsonl", flipped, "jsonl", sha256Hex(good));
  assertEquals(await code(openSource(f.spec, f.path)), "source_mismatch");
});

Deno.test("malformed rows and files fail with invalid_source naming the row", async () => {
  const cases: [string, string][] = [
    ['{"messages":[{"role":"user","content":"a"}]}\n\n{"messages":[]}\n', "row 1"],
    ['{"messages":[{"role":"user"}]}\n', "message 0"],
    ['{"messages":"hi"}\n', "row 0"],
    ['{"other":1}\n', "row 0"],
    ["[1,2]\n", "not an object"],
    ['{"messages":[{"role":"user","content":"a","extra":1}]}\n', "message 0"],
  ];
  for (const [text, where] of cases) {
    const j = await written("m.jsonl", new TextEncoder().encode(text), "jsonl");
    const s = await openSource(j.spec, j.path);
    const e = await assertRejects(() => s.read(0, s.count), ProtocolError);
    assertEquals([(e as ProtocolError).code, e.message.includes(where)], ["invalid_source", true], text);
  }
  const latin1 = await written("l.jsonl", new Uint8Array([0x7b, 0xff, 0x7d, 0x0a]), "jsonl");
  const s = await openSource(latin1.spec, latin1.path);
  assertEquals(await code(s.read(0, 1)), "invalid_source");
  const notParquet = await written("n.parquet", jsonlBytes(chatRows(2)), "parquet");
  assertEquals(await code(openSource(notParquet.spec, notParquet.path)), "invalid_source");
});

Deno.test("a row range outside the file and a missing file are refused", async () => {
  const j = await written("r.jsonl", jsonlBytes(chatRows(4)), "jsonl");
  const s = await openSource(j.spec, j.path);
  for (const [a, b] of [[0, 5], [-1, 2], [3, 2], [0.5, 2]]) {
    assertEquals(await code(s.read(a!, b!)), "invalid_source");
  }
  assertEquals(await code(openSource(j.spec, `${j.path}.missing`)), "not_found");
  // CRLF line ends read as the same rows; the last line may lack its newline.
  const crlf = new TextEncoder().encode(
    new TextDecoder().decode(jsonlBytes(chatRows(3))).replaceAll("\n", "\r\n").slice(0, -2),
  );
  const c = await written("c.jsonl", crlf, "jsonl");
  const cs = await openSource(c.spec, c.path);
  assertEquals([cs.count, await cs.read(0, 3)], [3, chatRows(3)]);
});

Deno.test("a source spec has exactly its seven fields with bounded values", () => {
  const good = { ...base, format: "jsonl", sha256: "ab".repeat(32) };
  assertEquals(pinnedPart(parseSourceSpec(good)), base);
  const bad: Record<string, unknown>[] = [
    { ...good, role: "eval" },
    { ...good, format: "csv" },
    { ...good, sha256: "AB".repeat(32) },
    { ...good, name: "" },
    { ...good, name: "has space" },
    { ...good, revision: "x".repeat(129) },
    { ...good, extra: 1 },
    { ...base, format: "jsonl" },
  ];
  for (const b of bad) {
    const e = assertThrows(() => parseSourceSpec(b), ProtocolError);
    assertEquals((e as ProtocolError).code, "invalid_source", JSON.stringify(b));
  }
});
