/**
 * The worker's bound on request bodies in flight (`WORKER_BODY_BYTES_IN_FLIGHT`): one maximal object
 * (`MAX_OBJECT_BYTES`) fits beside the server's default bound for everything else, a body that would pass the
 * bound is refused before a byte of it is read, and a refused body stores nothing.
 */
import assert from "node:assert/strict";
import { SERVER_LIMITS } from "../../../core/bounded_server.ts";
import { sha256Hex } from "../../../core/digest.ts";
import { MAX_OBJECT_BYTES } from "../../../core/limits.ts";
import { WorkerClient } from "../../../actors/common/worker_client.ts";
import { startWorker, WORKER_BODY_BYTES_IN_FLIGHT } from "../../../actors/worker/server.ts";

const decoder = new TextDecoder();

/** Sends a request head on a new connection and reads until the first response head is complete. */
async function head(port: number, lines: string): Promise<{ conn: Deno.TcpConn; answer: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(lines + "\r\n"));
  let answer = "";
  const buf = new Uint8Array(4096);
  while (!answer.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) break;
    answer += decoder.decode(buf.subarray(0, n));
  }
  return { conn, answer };
}

function putHead(token: string, root: string, length: number): string {
  return `PUT /object/put?root=${root} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
    `content-length: ${length}\r\nexpect: 100-continue\r\n`;
}

Deno.test("a worker admits one maximal object beside the default body bound, refuses a body past it with unavailable and one byte over the object limit with too_large, storing nothing refused", async () => {
  assert.equal(WORKER_BODY_BYTES_IN_FLIGHT, MAX_OBJECT_BYTES + SERVER_LIMITS.maxBodyBytesInFlight);
  const dir = await Deno.makeTempDir({ prefix: "worker-bound-" });
  const worker = await startWorker({ home: dir, port: 0, forge: null });
  const port = Number(new URL(worker.url).port);
  const token = worker.home.token;
  const open: Deno.TcpConn[] = [];
  try {
    const big = new Uint8Array(MAX_OBJECT_BYTES);
    for (let i = 0; i < big.length; i += 4096) big[i] = i & 0xff;
    const bigRoot = sha256Hex(big);
    const otherRoot = "b".repeat(64);
    // A maximal object's body is admitted (100 Continue: its bytes are reserved) while it is still unsent ...
    const first = await head(port, putHead(token, bigRoot, MAX_OBJECT_BYTES));
    open.push(first.conn);
    assert.match(first.answer, /^HTTP\/1\.1 100 Continue\r\n/);
    // ... beside it, a body one byte past what is left is refused before it is read ...
    const over = await head(port, putHead(token, otherRoot, SERVER_LIMITS.maxBodyBytesInFlight + 1));
    open.push(over.conn);
    assert.match(over.answer, /^HTTP\/1\.1 503 [^]*"code":"unavailable"/);
    // ... and one of exactly what is left is admitted.
    const rest = await head(port, putHead(token, otherRoot, SERVER_LIMITS.maxBodyBytesInFlight));
    open.push(rest.conn);
    assert.match(rest.answer, /^HTTP\/1\.1 100 Continue\r\n/);
    for (const c of open.splice(0)) c.close();
    // One byte over the object limit is refused on its declared length.
    const tooLarge = await head(port, putHead(token, otherRoot, MAX_OBJECT_BYTES + 1));
    open.push(tooLarge.conn);
    assert.match(tooLarge.answer, /^HTTP\/1\.1 413 [^]*"code":"too_large"/);
    assert.equal(await worker.home.store.has(bigRoot), false);
    assert.equal(await worker.home.store.has(otherRoot), false);
    // A maximal object sent whole is stored under its root, byte for byte.
    const client = new WorkerClient(worker.url, token);
    assert.equal(await client.putObject(big), bigRoot);
    assert.equal(await client.hasObject(bigRoot), true);
    assert.equal(sha256Hex(await worker.home.store.get(bigRoot)), bigRoot);
    assert.equal(await worker.home.store.has(otherRoot), false);
  } finally {
    for (const c of open) c.close();
    await worker.close();
    await Deno.remove(dir, { recursive: true });
  }
});
