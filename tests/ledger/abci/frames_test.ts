import { assertEquals, assertThrows } from "../../_assert.ts";
import { MAX_ABCI_CONNECTIONS } from "../../../ledger/abci/server.ts";
import { encodeFrame, encodeUvarint, FrameError, FrameReader } from "../../../ledger/abci/frames.ts";
import { AbciTestClient } from "./_client.ts";
import { serve } from "./_abci_fixture.ts";
import { snapshot, testApp } from "../_fixture.ts";

Deno.test("uvarint lengths are protobuf's base-128 encoding", () => {
  assertEquals([...encodeUvarint(0)], [0]);
  assertEquals([...encodeUvarint(127)], [127]);
  assertEquals([...encodeUvarint(300)], [0xac, 0x02]);
  assertEquals([...encodeUvarint(2 ** 21)], [0x80, 0x80, 0x80, 0x01]);
});

Deno.test("a frame split byte by byte, and frames concatenated in one read, come out whole and in order", () => {
  const a = encodeFrame(new Uint8Array(300).fill(7));
  const b = encodeFrame(new Uint8Array([1, 2, 3]));
  const empty = encodeFrame(new Uint8Array());
  const split = new FrameReader(1024);
  const got: Uint8Array[] = [];
  for (const byte of a) got.push(...split.push(new Uint8Array([byte])));
  assertEquals(got.map((f) => f.length), [300]);
  assertEquals(split.buffered, 0);
  const joined = new Uint8Array([...a, ...b, ...empty, ...b.subarray(0, 2)]);
  const reader = new FrameReader(1024);
  assertEquals(reader.push(joined).map((f) => [...f.subarray(0, 3)]), [[7, 7, 7], [1, 2, 3], []]);
  assertEquals(reader.buffered, 2);
  assertEquals(reader.push(b.subarray(2)).map((f) => [...f]), [[1, 2, 3]]);
});

Deno.test("a frame over the bound and a length prefix longer than the bound needs are refused", () => {
  const e = assertThrows(() => new FrameReader(1000).push(encodeUvarint(1001)), FrameError);
  assertEquals(e.message, "Cannot read frame: length is 1001 bytes, bound is 1000");
  // 1000 needs 2 prefix bytes; a third continuation byte is refused before any payload arrives.
  const long = assertThrows(() => new FrameReader(1000).push(new Uint8Array([0x80, 0x80, 0x80])), FrameError);
  assertEquals(long.message, "Cannot read frame: length prefix is longer than 2 bytes");
});

Deno.test("the server answers split and concatenated requests in order, and flushes only on Flush", async () => {
  const served = await serve(testApp());
  const c = await AbciTestClient.connect(served.server.proxyApp);
  try {
    const echo = (m: string) => AbciTestClient.frame({ case: "echo", value: { message: m } });
    const flush = AbciTestClient.frame({ case: "flush", value: {} });
    const all = new Uint8Array([...echo("one"), ...echo("two"), ...flush]);
    for (let i = 0; i < all.length; i += 3) await c.writeRaw(all.subarray(i, i + 3));
    const got = [await c.read(), await c.read(), await c.read()].map((r) =>
      r?.value.case === "echo" ? r.value.value.message : r?.value.case
    );
    assertEquals(got, ["one", "two", "flush"]);
    // Without a flush nothing is written yet; the flush releases both answers at once.
    await c.writeRaw(new Uint8Array([...echo("three"), ...echo("four")]));
    const pending = c.read();
    const early = await Promise.race([
      pending.then(() => "answered"),
      new Promise((r) => setTimeout(() => r("held"), 150)),
    ]);
    assertEquals(early, "held");
    await c.writeRaw(flush);
    const rest = [await pending, await c.read(), await c.read()].map((r) =>
      r?.value.case === "echo" ? r.value.value.message : r?.value.case
    );
    assertEquals(rest, ["three", "four", "flush"]);
  } finally {
    c.close();
    await served.close();
  }
});

for (
  const [name, bytes, reason] of [
    ["an oversized frame", encodeUvarint(5000), "Cannot read frame: length is 5000 bytes, bound is 4096"],
    [
      "garbage that is not a Request",
      encodeFrame(new Uint8Array([0xff, 0xff, 0xff, 0xff])),
      "Cannot decode request",
    ],
    [
      "a Request of no known kind",
      encodeFrame(new Uint8Array([0xf0, 0x01, 0x01])),
      "Cannot decode request: it has no known kind",
    ],
  ] as const
) {
  Deno.test(`${name} closes the connection with a log line; the state and other connections are unaffected`, async () => {
    const app = testApp();
    const before = [app.info().app_hash, snapshot(app)];
    const served = await serve(app, 4096);
    const bad = await AbciTestClient.connect(served.server.proxyApp);
    const good = await AbciTestClient.connect(served.server.proxyApp);
    try {
      await bad.writeRaw(bytes);
      assertEquals(await bad.read(), null);
      assertEquals(served.logs.length, 1);
      assertEquals(served.logs[0]!.startsWith("abci: closing connection from "), true);
      assertEquals(served.logs[0]!.includes(reason), true, served.logs[0]);
      const r = await good.call({ case: "echo", value: { message: "still here" } });
      assertEquals(r?.case === "echo" ? r.value.message : r?.case, "still here");
      assertEquals([app.info().app_hash, snapshot(app)], before);
    } finally {
      bad.close();
      good.close();
      await served.close();
    }
  });
}

Deno.test("a connection beyond the bound is closed on arrival with a log line; the open ones are still served", async () => {
  const app = testApp();
  const before = app.info().app_hash;
  const served = await serve(app);
  const open: AbciTestClient[] = [];
  try {
    for (let i = 0; i < MAX_ABCI_CONNECTIONS; i++) {
      const c = await AbciTestClient.connect(served.server.proxyApp);
      open.push(c);
      await c.call({ case: "echo", value: { message: `c${i}` } }); // accepted and registered before the next
    }
    const extra = await AbciTestClient.connect(served.server.proxyApp);
    open.push(extra);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const closed = await Promise.race([
      extra.read(),
      new Promise((r) => (timer = setTimeout(() => r("still open after 10 s"), 10_000))),
    ]);
    clearTimeout(timer);
    assertEquals(closed, null);
    assertEquals(served.logs.length, 1);
    assertEquals(
      /^abci: refusing connection from 127\.0\.0\.1:\d+: 8 are open, bound is 8$/.test(served.logs[0]!),
      true,
      served.logs[0],
    );
    const r = await open[0]!.call({ case: "echo", value: { message: "still here" } });
    assertEquals(r?.case === "echo" ? r.value.message : r?.case, "still here");
    // A closed connection frees its place.
    open[1]!.close();
    let again: AbciTestClient | null = null;
    for (let attempt = 0; attempt < 100 && again === null; attempt++) {
      const c = await AbciTestClient.connect(served.server.proxyApp);
      open.push(c);
      try {
        await c.call({ case: "echo", value: { message: "new" } });
        again = c;
      } catch {
        await new Promise((res) => setTimeout(res, 20)); // the server has not seen the close yet
      }
    }
    assertEquals(again !== null, true, "a place freed by a closed connection was never given again");
    assertEquals(app.info().app_hash, before);
  } finally {
    for (const c of open) c.close();
    await served.close();
  }
});
