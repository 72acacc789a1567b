import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { canonical, type JsonObject } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { keyFromSeed } from "../../ledger/keys.ts";
import { consensusKeyFromSeed, possessionMessage, signEd25519 } from "../../ledger/consensus_key.ts";
import { signBody, type TxBody } from "../../ledger/envelope.ts";
import { CHAIN, consSeeds, testGenesis } from "../ledger/_fixture.ts";
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

const SEED = Number(Deno.env.get("NEURO_SEED") ?? "20261129");
const BLOCKS = Number(
  Deno.env.get("NEURO_LEDGER_BLOCKS") ?? (Deno.env.get("NEURO_SLOW") === "1" ? "3000" : "1000"),
);

const accounts = Array.from(
  { length: 12 },
  (_, i) => keyFromSeed(sha256Hex(new TextEncoder().encode(`account-${SEED}-${i}`))),
);
const spares = Array.from(
  { length: 6 },
  (_, i) => consensusKeyFromSeed(sha256Hex(new TextEncoder().encode(`cons-${SEED}-${i}`))),
);

function genesis(): JsonObject {
  const g = testGenesis();
  return {
    ...g,
    accounts: [
      ...(g.accounts as JsonObject[]),
      ...accounts.map((a) => ({ id: a.accountId, balance: 5_000_000 })),
    ],
  };
}

async function broadcast(url: string, body: TxBody, key: (typeof accounts)[number]): Promise<boolean> {
  const res = await fetch(`${url}/broadcast_tx`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: canonical(signBody(body, key)),
  });
  const answer = JSON.parse(await res.text()) as { check: { ok: boolean } };
  return answer.check.ok;
}

Deno.test(`a seeded random workload of ${BLOCKS} blocks gives identical app hashes at every height on the proposer and two replica processes (seed ${SEED})`, async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, genesis(), consSeeds.slice(0, 2));
    procs.push(await startProc(`${dir}/v0`, path, { intervalMs: 10 }));
    procs.push(await startProc(`${dir}/v1`, path, { follow: procs[0]!.url }));
    procs.push(await startProc(`${dir}/r2`, path, { follow: procs[0]!.url }));
    const url = procs[0]!.url;
    const rand = prng(SEED);
    const nonces = accounts.map(() => 0);
    let spare = 0;
    const bonded: [number, string][] = [];
    let accepted = 0;
    let height = 0;
    // Every accepted transaction costs the proposer one journal sync before it answers, so the workload runs
    // until both the blocks and the accepted transactions are there.
    while (height < BLOCKS || accepted <= BLOCKS / 2) {
      const n = Math.floor(rand() * 4);
      for (let k = 0; k < n; k++) {
        const s = Math.floor(rand() * accounts.length);
        const r = rand();
        const base = { chain_id: CHAIN, nonce: nonces[s]! };
        let body: TxBody;
        if (r < 0.02 && spare < spares.length) {
          const c = spares[spare++]!;
          const amount = 250_000;
          const possession = signEd25519(
            c,
            possessionMessage({
              chain_id: CHAIN,
              owner: accounts[s]!.accountId,
              consensus_key: c.publicKey,
              amount,
              nonce: nonces[s]!,
            }),
          );
          body = { ...base, kind: "bond", consensus_key: c.publicKey, amount, possession };
          bonded.push([s, c.publicKey]);
        } else if (r < 0.03 && bonded.length > 0) {
          const [owner, key] = bonded.shift()!;
          body = { kind: "unbond", chain_id: CHAIN, nonce: nonces[owner]!, consensus_key: key };
          if (await broadcast(url, body, accounts[owner]!)) (nonces[owner]!++, accepted++);
          continue;
        } else if (r < 0.08) {
          body = { ...base, kind: "transfer", to: accounts[0]!.accountId, amount: 100_000_000 }; // overspend: refused
        } else {
          const to = accounts[Math.floor(rand() * accounts.length)]!.accountId;
          body = { ...base, kind: "transfer", to, amount: 1 + Math.floor(rand() * 20_000) };
        }
        if (await broadcast(url, body, accounts[s]!)) (nonces[s]!++, accepted++);
      }
      height = (await getJson<{ height: number }>(`${url}/status`)).height;
      await new Promise((r) => setTimeout(r, 3));
    }
    const target = (await getJson<{ height: number }>(`${url}/status`)).height;
    await until("replicas to catch up", async () => {
      const hs = await Promise.all(procs.map((p) => getJson<{ height: number }>(`${p.url}/status`)));
      return hs.every((h) => h.height >= target);
      // Replicas fetch every block through the bounded RPC server (about twice Deno.serve's time per
      // request), so on a loaded machine they may finish well after the proposer.
    }, 180_000);
    for (const p of procs) await stopProc(p);
    const maps = procs.map((p) => committedHashes(p.home));
    for (let h = 1; h <= target; h++) {
      const hs = maps.map((m) => m.get(h));
      if (hs[0] === undefined || hs[0] !== hs[1] || hs[0] !== hs[2]) {
        throw new Error(`seed ${SEED}: app hashes differ at height ${h}: ${hs.join(" ")}`);
      }
    }
    equal(accepted > BLOCKS / 2, true, `seed ${SEED}: only ${accepted} transactions were accepted`);
    assertEquals(procs.map((p) => p.lines.filter((l) => l.startsWith("HALT")).length), [0, 0, 0]);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
