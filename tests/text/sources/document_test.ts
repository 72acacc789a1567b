/** Row documents: copies that differ only in case, Unicode form and whitespace share an id; others do not. */
import { rowDocument, rowText } from "../../../text/sources/document.ts";
import { id, sha256Hex } from "../../../core/digest.ts";
import { isNearDuplicate } from "../../../text/hygiene.ts";
import { assertEquals } from "../../_assert.ts";

const row = (q: string, a: string) => [{ role: "user", content: q }, { role: "assistant", content: a }];

Deno.test("exact duplicates differing in case, Unicode form and whitespace share one id", () => {
  const a = rowDocument(row("Straße  café ﬁne", "Ångström\tunits"));
  // Upper case, decomposed é and Å (NFD), the ﬁ ligature spelled out, other whitespace.
  const b = rowDocument(row("STRASSE cafe\u0301 fine", "A\u030angstro\u0308m \n UNITS"));
  assertEquals(a.id, b.id);
  assertEquals(a.simhash, b.simhash);
  assertEquals(a.object === b.object, false); // the raw objects differ: only the id is shared
  const c = rowDocument(row("Straße café fine", "Angstrom units"));
  assertEquals(c.id === a.id, false);
});

Deno.test("the id sees who said what, and the object is the canonical {messages}", () => {
  const q = rowDocument(row("hello", "world"));
  const swapped = rowDocument([{ role: "assistant", content: "hello" }, { role: "user", content: "world" }]);
  assertEquals(q.id === swapped.id, false);
  assertEquals(rowText(row("hello", "world")), "user\nhello\nassistant\nworld");
  assertEquals(
    new TextDecoder().decode(q.bytes),
    '{"messages":[{"content":"hello","role":"user"},{"content":"world","role":"assistant"}]}',
  );
  assertEquals([q.object, q.object], [sha256Hex(q.bytes), id({ messages: row("hello", "world") })]);
});

Deno.test("a row with one word appended is a near duplicate, another row is not", () => {
  const words = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");
  const a = rowDocument(row(words, "the answer is forty two"));
  const b = rowDocument(row(words, "the answer is forty two more"));
  assertEquals([a.id === b.id, isNearDuplicate(a.simhash, b.simhash)], [false, true]);
  const other = rowDocument(row("a completely different question about rivers and mountains", "no"));
  assertEquals(isNearDuplicate(a.simhash, other.simhash), false);
});
