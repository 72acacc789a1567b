import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { alice, bob, consSeeds, testGenesis, tx } from "../ledger/_fixture.ts";
import {
  committedHashes,
  getJson,
  type NodeProc,
  prepare,
  startProc,
  stopProc,
  until,
} from "./_ledger_procs.ts";

/**
 * Far enough ahead that the transfers and the block reads finish before the node pauses (and stops answering):
 * 30 blocks of 250 ms. At 50 ms a block, a loaded machine reached the pause before the reads were done; the
 * reads then waited out the pause and the node committed past it before the kill.
 */
const PAUSE = 30;
const PAUSED_INTERVAL_MS = 250;

Deno.test("a validator killed with SIGKILL while applying a block restarts at the last committed height with the same app hash and loses no committed transaction", async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 1));
    const first = await startProc(`${dir}/v0`, path, {
      intervalMs: PAUSED_INTERVAL_MS,
      env: { NEURO_TEST_PAUSE_BEFORE_COMMIT: String(PAUSE) },
    });
    procs.push(first);
    const committed: { hash: string; height: number }[] = [];
    for (let nonce = 0; nonce < 4; nonce++) {
      const res = await fetch(`${first.url}/broadcast_tx`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: canonical(tx(alice, "transfer", nonce, { to: bob.accountId, amount: 100 + nonce })),
      });
      const { hash } = JSON.parse(await res.text()) as { hash: string };
      let answer = { status: "", height: 0 };
      await until(
        `tx ${nonce}`,
        async () => (answer = await getJson(`${first.url}/tx?hash=${hash}`)).status === "committed",
      );
      committed.push({ hash, height: answer.height });
    }
    equal(committed.at(-1)!.height < PAUSE, true, "the transfers must commit before the paused block");
    const seen = new Map<number, string>();
    for (let h = 1; h < PAUSE; h++) {
      await until(
        `block ${h}`,
        async () =>
          (await fetch(`${first.url}/block?height=${h}`).then((r) => (r.body?.cancel(), r.status))) === 200,
      );
      seen.set(h, (await getJson<{ app_hash: string }>(`${first.url}/block?height=${h}`)).app_hash);
    }
    await until("the node to pause inside block application", async () => {
      try {
        return (await Deno.readTextFile(`${dir}/v0/paused-before-commit`)).trim() === String(PAUSE);
      } catch {
        return false;
      }
    });
    first.child.kill("SIGKILL");
    equal(await first.exited, 137);
    const onDisk = committedHashes(`${dir}/v0`);
    assertEquals(onDisk.size, PAUSE - 1);
    for (const [h, a] of seen) equal(onDisk.get(h), a, `height ${h}`);

    const second = await startProc(`${dir}/v0`, path, { intervalMs: 40 });
    procs.push(second);
    equal(
      second.lines.some((l) =>
        l.includes(`listening on ${second.url} at height ${PAUSE - 1} "${seen.get(PAUSE - 1)}"`)
      ),
      true,
      second.lines.join("\n"),
    );
    for (const c of committed) {
      assertEquals(await getJson(`${second.url}/tx?hash=${c.hash}`), {
        height: c.height,
        result: { ok: true },
        status: "committed",
      });
    }
    assertEquals(
      await getJson(`${second.url}/account/${bob.accountId}`).then((a) => (a as { balance: number }).balance),
      100 + 101 + 102 + 103,
    );
    await until(
      "the restarted node to continue",
      async () => (await getJson<{ height: number }>(`${second.url}/status`)).height >= PAUSE + 2,
    );
    for (const [h, a] of seen) {
      equal((await getJson<{ app_hash: string }>(`${second.url}/block?height=${h}`)).app_hash, a);
    }
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a replica killed with SIGKILL resumes at its committed height and catches up with identical hashes", async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 2));
    const proposer = await startProc(`${dir}/v0`, path, { intervalMs: 30 });
    procs.push(proposer);
    const replica = await startProc(`${dir}/v1`, path, { follow: proposer.url });
    procs.push(replica);
    await until(
      "the replica to follow",
      async () => (await getJson<{ height: number }>(`${replica.url}/status`)).height >= 5,
    );
    replica.child.kill("SIGKILL");
    await replica.exited;
    const kept = committedHashes(`${dir}/v1`).size;
    await until(
      "the proposer to move on",
      async () => (await getJson<{ height: number }>(`${proposer.url}/status`)).height >= kept + 5,
    );
    const again = await startProc(`${dir}/v1`, path, { follow: proposer.url });
    procs.push(again);
    equal(again.lines.some((l) => l.includes(` at height ${kept} `)), true, again.lines.join("\n"));
    const target = (await getJson<{ height: number }>(`${proposer.url}/status`)).height;
    await until(
      "the replica to catch up",
      async () => (await getJson<{ height: number }>(`${again.url}/status`)).height >= target,
    );
    for (const p of procs) await stopProc(p);
    const a = committedHashes(`${dir}/v0`);
    const b = committedHashes(`${dir}/v1`);
    for (let h = 1; h <= target; h++) equal(b.get(h), a.get(h), `height ${h}`);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
