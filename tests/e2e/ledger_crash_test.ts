import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { alice, bob, consSeeds, testGenesis, tx } from "../ledger/_fixture.ts";
import {
  committedHashes,
  getJson,
  type NodeProc,
  prepare,
  prng,
  startProc,
  stopProc,
  until,
} from "./_ledger_procs.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
const KILLS = SLOW ? 12 : 3;
const SEED = Number(Deno.env.get("NEURO_SEED") ?? "7");

Deno.test(`the proposer killed with SIGKILL at ${KILLS} random moments under load keeps every committed transaction and the replica agrees at every height (seed ${SEED})`, async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  const rand = prng(SEED);
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 2));
    let proposer = await startProc(`${dir}/v0`, path, { intervalMs: 20 });
    procs.push(proposer);
    const replica = await startProc(`${dir}/v1`, path, { follow: proposer.url });
    procs.push(replica);
    const committed = new Map<string, number>();
    let nonce = 0;
    for (let k = 0; k < KILLS; k++) {
      const killAt = Date.now() + 100 + Math.floor(rand() * 300);
      while (Date.now() < killAt) {
        const res = await fetch(`${proposer.url}/broadcast_tx`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: canonical(tx(alice, "transfer", nonce, { to: bob.accountId, amount: 1 })),
        }).catch(() => null);
        const answer = res ? JSON.parse(await res.text()) as { hash: string; check: { ok: boolean } } : null;
        if (answer?.check.ok) {
          nonce++;
          const hash = answer.hash;
          // Remember it once the proposer says it is committed.
          await until("commit", async () => {
            const t = await getJson<{ status: string; height?: number }>(`${proposer.url}/tx?hash=${hash}`);
            if (t.status === "committed") committed.set(hash, t.height!);
            return t.status === "committed";
          }, 5_000).catch(() => {});
        }
      }
      proposer.child.kill("SIGKILL");
      await proposer.exited;
      // Transactions admitted but not committed are lost with the mempool: the next nonce is what state says.
      proposer = await startProc(`${dir}/v0`, path, {
        intervalMs: 20,
        port: Number(new URL(proposer.url).port),
      });
      procs.push(proposer);
      nonce = (await getJson<{ nonce: number }>(`${proposer.url}/account/${alice.accountId}`)).nonce;
      for (const [hash, height] of committed) {
        assertEquals(await getJson(`${proposer.url}/tx?hash=${hash}`), {
          height,
          result: { ok: true },
          status: "committed",
        });
      }
    }
    equal(committed.size > 0, true, "no transaction was committed");
    // The replica keeps following the restarted proposer.
    const target = (await getJson<{ height: number }>(`${proposer.url}/status`)).height;
    await until("the replica", async () => {
      const s = await getJson<{ height: number }>(`${replica.url}/status`).catch(() => ({ height: -1 }));
      return s.height >= target;
    }, 60_000);
    for (const p of procs) await stopProc(p);
    const a = committedHashes(`${dir}/v0`);
    const b = committedHashes(`${dir}/v1`);
    for (let h = 1; h <= target; h++) equal(b.get(h), a.get(h), `seed ${SEED}: height ${h}`);
    equal(replica.lines.some((l) => l.startsWith("HALT")), false, replica.lines.join("\n"));
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
