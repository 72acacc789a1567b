/**
 * A replica in front of a stuck proposer (a socket that accepts and never answers): forwarded `/broadcast_tx`
 * and `/tx` fail with 504 `upstream_timeout` after the bound and the follow loop says why it retries; a
 * replica told to follow a URL its permissions cannot reach exits at once with `permission_denied`.
 */
import { deepStrictEqual as assertEquals, equal, match } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { alice, bob, consSeeds, testGenesis, tx } from "../ledger/_fixture.ts";
import { type NodeProc, prepare, startProc, stopProc, until } from "../e2e/_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A "proposer" that accepts connections, reads what it is sent and never answers. */
function stuckProposer(): { port: number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      conn.readable.pipeTo(new WritableStream()).catch(() => {});
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed already */ }
      }
    },
  };
}

Deno.test("a replica whose proposer never answers fails forwarded requests with 504 upstream_timeout and its follow loop reports it", async () => {
  const dir = await Deno.makeTempDir();
  const stuck = stuckProposer();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 2));
    const replica = await startProc(`${dir}/v1`, path, {
      follow: `http://127.0.0.1:${stuck.port}`,
      args: ["--upstream-timeout-ms", "1000"],
    });
    procs.push(replica);
    const started = performance.now();
    const res = await fetch(`${replica.url}/broadcast_tx`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: canonical(tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 })),
    });
    const took = performance.now() - started;
    const answer = JSON.parse(await res.text());
    equal(res.status, 504);
    equal(answer.code, "upstream_timeout");
    match(
      answer.message,
      /^Cannot forward to http:\/\/127\.0\.0\.1:\d+\/broadcast_tx: no answer within 1000 ms$/,
    );
    equal(took >= 900 && took < 5_000, true, `answered after ${took} ms`);
    const lookup = await fetch(`${replica.url}/tx?hash=${"ab".repeat(32)}`);
    assertEquals([lookup.status, JSON.parse(await lookup.text()).code], [504, "upstream_timeout"]);
    await until(
      "the follow loop to report the timeout",
      () =>
        replica.lines.some((l) =>
          l.endsWith("unreachable (no answer within 6000 ms (upstream_timeout)); retrying")
        ),
      60_000,
    ).catch((e) => {
      throw new Error(`${e.message}:\n${replica.lines.join("\n")}`);
    });
    equal((await fetch(`${replica.url}/status`).then((r) => r.json())).height, 0);
  } finally {
    for (const p of procs) await stopProc(p);
    stuck.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task validator --follow http://localhost:… (not reachable under --allow-net=127.0.0.1) exits 1 with permission_denied", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 2));
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "-q",
        "validator",
        "--home",
        `${dir}/v1`,
        "--genesis",
        path,
        "--follow",
        "http://localhost:26657",
      ],
      cwd: ROOT,
      env: { DENO_NO_PROMPT: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr).trim();
    equal(out.code, 1, err);
    equal(
      err,
      "error: Cannot follow http://localhost:26657: net access to localhost:26657 is prompt for this process (the validator task may reach 127.0.0.1 only) (permission_denied)",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
