import { deepStrictEqual as assertEquals, match } from "node:assert/strict";
import { serveBounded } from "../../core/bounded_server.ts";

function echoServer(limits = {}) {
  return serveBounded({
    limits,
    admit: (head) => (head.target === "/refuse" ? new Response("no", { status: 403 }) : 1000),
    refusal: (status, code, message) => new Response(JSON.stringify({ code, message }), { status }),
    handler: async (req) =>
      new Response(`${req.method} ${new URL(req.url).pathname} ${(await req.text()).length}`),
  });
}

async function raw(port: number, bytes: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(bytes));
  const out = await new Response(conn.readable).text();
  return out;
}

Deno.test("a bounded server answers pipelined requests on one connection in order, with a chunked body", async () => {
  const server = echoServer();
  try {
    const answer = await raw(
      server.port,
      "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc" +
        "POST /b HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n" +
        "GET /c HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    const bodies = answer.split("\r\n\r\n").slice(1).map((s) => s.split("HTTP/1.1")[0]);
    assertEquals(bodies, ["POST /a 3", "POST /b 5", "GET /c 0"]);
  } finally {
    await server.close();
  }
});

Deno.test("a bounded server refuses an oversized head (431), a body over the admitted bound (413) and what admit refuses, reading no body", async () => {
  const server = echoServer({ maxHeaderBytes: 256 });
  try {
    match(
      await raw(server.port, `GET / HTTP/1.1\r\nx: ${"a".repeat(300)}\r\n\r\n`),
      /^HTTP\/1\.1 431 [^]*too_large/,
    );
    match(
      await raw(server.port, "POST / HTTP/1.1\r\ncontent-length: 1001\r\n\r\n"),
      /^HTTP\/1\.1 413 [^]*Cannot accept body: content-length is 1001, limit 1000/,
    );
    match(
      await raw(server.port, "POST /refuse HTTP/1.1\r\ncontent-length: 5\r\n\r\n"),
      /^HTTP\/1\.1 403 [^]*no$/,
    );
    match(await raw(server.port, "NOT HTTP\r\n\r\n"), /^HTTP\/1\.1 400 [^]*malformed request line/);
  } finally {
    await server.close();
  }
});

Deno.test("bodies being received are bounded together: past the budget a request is 503 unavailable", async () => {
  const server = echoServer({ maxBodyBytesInFlight: 1500 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    // One unfinished body reserves 1,000 of the 1,500 bytes; a second one of 1,000 does not fit.
    await conn.write(new TextEncoder().encode("POST / HTTP/1.1\r\ncontent-length: 1000\r\n\r\nab"));
    await new Promise((r) => setTimeout(r, 100));
    match(
      await raw(server.port, "POST / HTTP/1.1\r\ncontent-length: 1000\r\n\r\n"),
      /^HTTP\/1\.1 503 [^]*unavailable/,
    );
    match(
      await raw(
        server.port,
        "POST / HTTP/1.1\r\ncontent-length: 400\r\nconnection: close\r\n\r\n" + "x".repeat(400),
      ),
      /POST \/ 400$/,
    );
  } finally {
    conn.close();
    await server.close();
  }
});

Deno.test("a stalled event loop does not expire connections whose bytes arrived in time; silent and half-sent ones still expire", async () => {
  const server = echoServer({ idleTimeoutMs: 300, headerTimeoutMs: 300 });
  const open = () => Deno.connect({ hostname: "127.0.0.1", port: server.port });
  const [prompt, half, silent] = [await open(), await open(), await open()];
  try {
    await new Promise((r) => setTimeout(r, 50)); // all three accepted, each server read pending
    const encode = (s: string) => new TextEncoder().encode(s);
    await prompt.write(encode("GET /in-time HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"));
    await half.write(encode("GET /half HTTP/1.1\r\nx-half: "));
    // The loop stalls past every deadline (as a synchronous commit waiting on a slow disk does); the bytes
    // were there before the idle deadline, so the prompt request is answered and the half head gets its 408.
    const until = performance.now() + 700;
    while (performance.now() < until) { /* stalled */ }
    const started = performance.now();
    const [a, b, c] = await Promise.all([prompt, half, silent].map((s) => new Response(s!.readable).text()));
    match(a!, /^HTTP\/1\.1 200 [^]*GET \/in-time 0$/);
    match(b!, /^HTTP\/1\.1 408 [^]*request_timeout[^]*head not complete after 300 ms/);
    assertEquals(c, "");
    assertEquals(performance.now() - started < 2_000, true);
  } finally {
    await server.close();
  }
});
