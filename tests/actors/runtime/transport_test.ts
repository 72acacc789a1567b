import assert from "node:assert/strict";
import { ProtocolError, RetryableError } from "../../../core/errors.ts";
import { loadToken, tokensEqual } from "../../../actors/runtime/token.ts";
import { type Route, serve, TransportClient } from "../../../actors/runtime/transport.ts";
import { tempDir } from "./_temp.ts";

const TOKEN = "5a".repeat(32);
const enc = new TextEncoder();
const dec = new TextDecoder();

/** A server whose routes count how many times they ran. */
function start(bodyTimeoutMs = 2000) {
  const ran = { count: 0 };
  const echo: Route = {
    method: "POST",
    handle: (req) => {
      ran.count++;
      return { body: { got: dec.decode(req.body) } };
    },
  };
  const server = serve({
    token: TOKEN,
    bodyTimeoutMs,
    routes: {
      "/echo": echo,
      "/big": {
        method: "POST",
        maxBody: 1024 * 1024,
        handle: (req) => ({ body: { size: req.body.length } }),
      },
      "/conflict": {
        method: "POST",
        handle: () => {
          throw new ProtocolError(
            "conflicting_operation",
            "Cannot begin operation x: input hash is a, recorded b",
          );
        },
      },
      "/busy": {
        method: "GET",
        handle: () => {
          throw new RetryableError("store busy");
        },
      },
    },
  });
  return { server, ran };
}

async function call(url: string, init: RequestInit): Promise<{ status: number; body: string }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.text() };
}

Deno.test("a missing token file is created with mode 0600 and 32 random bytes in hex, then read back", async () => {
  const path = `${tempDir("transport_test_")}/http.token`;
  const token = await loadToken(path);
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  assert.equal(await loadToken(path), token);
});

Deno.test("a token file readable by others, a short token or a non-hex token is refused with invalid_key", async () => {
  const dir = tempDir("transport_test_");
  const cases: [string, number, RegExp][] = [
    ["ab".repeat(32), 0o644, /mode is 0644, expected 0600/],
    ["ab".repeat(31), 0o600, /token is 62 characters/],
    ["AB".repeat(32), 0o600, /lowercase hex/],
  ];
  for (const [i, [text, mode, message]] of cases.entries()) {
    const path = `${dir}/t${i}`;
    Deno.writeTextFileSync(path, text);
    Deno.chmodSync(path, mode);
    await assert.rejects(
      loadToken(path),
      (e: unknown) => e instanceof ProtocolError && e.code === "invalid_key" && message.test(e.message),
    );
    assert.equal(Deno.readTextFileSync(path), text);
  }
});

Deno.test("tokens compare equal only when identical", () => {
  assert.equal(tokensEqual(TOKEN, TOKEN), true);
  assert.equal(tokensEqual(TOKEN, TOKEN.slice(0, -1) + "b"), false);
  assert.equal(tokensEqual(TOKEN, TOKEN + "5a"), false);
});

Deno.test("a request with the right token reaches its route and gets canonical JSON", async () => {
  const { server, ran } = start();
  const client = new TransportClient(server.url, TOKEN);
  assert.equal(dec.decode(await client.request("POST", "/echo", enc.encode("hi"))), '{"got":"hi"}');
  assert.equal(ran.count, 1);
  await server.close();
});

Deno.test("missing and wrong tokens are 401 unauthorized and nothing runs", async () => {
  const { server, ran } = start();
  const none = await call(server.url + "/echo", { method: "POST", body: "x" });
  assert.deepEqual(none, {
    status: 401,
    body: '{"code":"unauthorized","message":"Cannot accept request: bearer token is missing"}',
  });
  const wrong = await call(server.url + "/echo", {
    method: "POST",
    body: "x",
    headers: { authorization: `Bearer ${"00".repeat(32)}` },
  });
  assert.deepEqual(wrong, {
    status: 401,
    body: '{"code":"unauthorized","message":"Cannot accept request: bearer token is wrong"}',
  });
  const basic = await call(server.url + "/nowhere", { headers: { authorization: TOKEN } });
  assert.equal(basic.status, 401);
  await assert.rejects(
    new TransportClient(server.url, "11".repeat(32)).request("POST", "/echo", enc.encode("x")),
    (e: unknown) => e instanceof ProtocolError && e.code === "unauthorized",
  );
  assert.equal(ran.count, 0);
  await server.close();
});

Deno.test("an oversize body is 413 too_large whether declared or streamed, and nothing runs", async () => {
  const { server, ran } = start();
  const auth = { authorization: `Bearer ${TOKEN}` };
  const declared = await call(server.url + "/echo", {
    method: "POST",
    body: new Uint8Array(256 * 1024 + 1),
    headers: auth,
  });
  assert.deepEqual(declared, {
    status: 413,
    body: '{"code":"too_large","message":"Cannot accept body: content-length is 262145, limit 262144"}',
  });
  const chunks = [new Uint8Array(200 * 1024), new Uint8Array(100 * 1024)];
  const streamed = await call(server.url + "/echo", {
    method: "POST",
    body: new ReadableStream({
      pull(c) {
        const next = chunks.shift();
        if (next === undefined) c.close();
        else c.enqueue(next);
      },
    }),
    headers: auth,
  });
  assert.deepEqual(streamed, {
    status: 413,
    body: '{"code":"too_large","message":"Cannot accept body: more than 262144 bytes"}',
  });
  const exact = await call(server.url + "/echo", {
    method: "POST",
    body: new Uint8Array(256 * 1024),
    headers: auth,
  });
  assert.equal(exact.status, 200);
  assert.equal(ran.count, 1);
  await server.close();
});

Deno.test("a route with a larger bound (object transfer) accepts a larger body", async () => {
  const { server } = start();
  const client = new TransportClient(server.url, TOKEN);
  assert.deepEqual(await client.json("POST", "/big", new Uint8Array(600 * 1024)), { size: 600 * 1024 });
  await server.close();
});

Deno.test("a client that sends its body too slowly gets 408 request_timeout and nothing runs", async () => {
  const { server, ran } = start(300);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  await conn.write(enc.encode(
    `POST /echo HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\ncontent-length: 100\r\n\r\n0123456789`,
  ));
  const buf = new Uint8Array(4096);
  const n = await conn.read(buf);
  const answer = dec.decode(buf.subarray(0, n ?? 0));
  conn.close();
  assert.match(answer, /^HTTP\/1\.1 408 /);
  assert.ok(
    answer.endsWith('{"code":"request_timeout","message":"Cannot read body: not complete after 300 ms"}'),
  );
  assert.equal(ran.count, 0);
  await server.close();
});

Deno.test("unknown path is 404, wrong method 405, a conflict 409 and a retryable failure 503", async () => {
  const { server, ran } = start();
  const client = new TransportClient(server.url, TOKEN);
  await assert.rejects(
    client.request("GET", "/nope"),
    (e: unknown) => e instanceof ProtocolError && e.code === "not_found",
  );
  const auth = { authorization: `Bearer ${TOKEN}` };
  assert.deepEqual(await call(server.url + "/echo", { headers: auth }), {
    status: 405,
    body: '{"code":"bad_request","message":"Cannot route request: method is GET, expected POST"}',
  });
  const conflict = await call(server.url + "/conflict", { method: "POST", headers: auth });
  assert.equal(conflict.status, 409);
  assert.equal(JSON.parse(conflict.body).code, "conflicting_operation");
  await assert.rejects(
    client.request("GET", "/busy"),
    (e: unknown) => e instanceof RetryableError && /unavailable: store busy/.test(e.message),
  );
  assert.equal(ran.count, 0);
  await server.close();
});

Deno.test("a client that cannot connect gets a RetryableError", async () => {
  const { server } = start();
  const url = server.url;
  await server.close();
  await assert.rejects(new TransportClient(url, TOKEN).request("GET", "/busy"), RetryableError);
});
