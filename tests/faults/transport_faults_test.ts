/**
 * The crash actor served over the loopback transport as a real process: requests with a wrong or missing
 * token, an oversize body or a body that arrives too slowly get their status and execute nothing (no
 * journal entry, no effect at the counting server); a correct request then executes once.
 */
import assert from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { OPERATIONS } from "./_operations.ts";
import { startSink } from "./_sink.ts";
import { tempDir } from "../actors/runtime/_temp.ts";

const ACTOR = new URL("./crash_actor.ts", import.meta.url).pathname;
const enc = new TextEncoder();

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.split("\n")[0]!;
}

Deno.test("wrong token, missing token, oversize body and slow client are refused and nothing executes", async () => {
  const sink = startSink();
  const home = tempDir("transport_faults_");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", ACTOR, "serve", "--home", home, "--sink", sink.url],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const { url } = JSON.parse(await firstLine(child.stdout));
    const token = Deno.readTextFileSync(`${home}/http.token`).trim();
    assert.equal(Deno.statSync(`${home}/http.token`).mode! & 0o777, 0o600);
    const op = OPERATIONS[0]!;
    const body = canonical({ handler: "work", op_id: op.opId, input: op.input });
    const post = async (headers: Record<string, string>, payload: string | Uint8Array<ArrayBuffer>) => {
      const res = await fetch(`${url}/deliver`, { method: "POST", headers, body: payload });
      return { status: res.status, body: await res.text() };
    };

    assert.deepEqual(await post({}, body), {
      status: 401,
      body: '{"code":"unauthorized","message":"Cannot accept request: bearer token is missing"}',
    });
    assert.equal((await post({ authorization: `Bearer ${"0".repeat(64)}` }, body)).status, 401);
    assert.equal((await post({ authorization: token }, body)).status, 401);
    const big = await post({ authorization: `Bearer ${token}` }, new Uint8Array(300 * 1024));
    assert.deepEqual([big.status, JSON.parse(big.body).code], [413, "too_large"]);

    const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) });
    await conn.write(enc.encode(
      `POST /deliver HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\n` +
        `content-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    ));
    const buf = new Uint8Array(4096);
    const n = await conn.read(buf);
    conn.close();
    assert.match(
      new TextDecoder().decode(buf.subarray(0, n ?? 0)),
      /^HTTP\/1\.1 408 [^]*"code":"request_timeout"/,
    );

    const journal = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
    assert.deepEqual(journal.operations(), []);
    assert.equal(sink.log.deliveries.size, 0);

    const ok = await post({ authorization: `Bearer ${token}` }, body);
    assert.equal(ok.status, 200);
    assert.equal(JSON.parse(ok.body).value.n, 2);
    assert.deepEqual(journal.operations().map((o) => [o.opId, o.status]), [[op.opId, "done"]]);
    assert.equal(sink.log.deliveries.size, 1);
    journal.close();
  } finally {
    await child.stdin.close();
    const status = await child.status;
    await sink.close();
    assert.equal(status.code, 0);
  }
});

Deno.test("an actor refuses to serve with a token file readable by others", async () => {
  const home = tempDir("transport_faults_");
  Deno.writeTextFileSync(`${home}/http.token`, "ab".repeat(32));
  Deno.chmodSync(`${home}/http.token`, 0o644);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", ACTOR, "serve", "--home", home, "--sink", "http://127.0.0.1:9"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.notEqual(out.code, 0);
  assert.match(new TextDecoder().decode(out.stderr), /Cannot use token file .*: mode is 0644, expected 0600/);
  assert.equal(new TextDecoder().decode(out.stdout), "");
});
