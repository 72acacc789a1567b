/**
 * Ledger benchmarks: block apply time (finalizeBlock + commit on a real SQLite file with synchronous=FULL,
 * signatures verified as a replica does) at 1, 100 and 1,000 transfers per block, and signed transfers per
 * second end to end (HTTP broadcast → mempool → block → commit) on one proposer. Target: ≥ 1,000 transfers/s.
 *
 * Run: `deno task bench bench/ledger_bench.ts` (or `deno bench -A bench/ledger_bench.ts`).
 */
import { canonical, canonicalBytes, type JsonObject } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { type AccountKey, keyFromSeed } from "../ledger/keys.ts";
import { type Envelope, signBody } from "../ledger/envelope.ts";
import { LedgerApp } from "../ledger/app.ts";
import { startNode } from "../ledger/engine/node.ts";
import { DEVNET_PARAMS } from "../workflows/params.ts";
import { conformanceVectors } from "../genesis/conformance.ts";

const CHAIN = "bench";
const SENDERS = 40;
const keys: AccountKey[] = Array.from(
  { length: SENDERS },
  (_, i) => keyFromSeed(sha256Hex(new TextEncoder().encode(`bench-${i}`))),
);
const sink = keyFromSeed("5e".repeat(32)).accountId;
const validatorKey = "ab".repeat(32);

function genesis(): JsonObject {
  return {
    chain_id: CHAIN,
    genesis_time: 0,
    params: { ...DEVNET_PARAMS },
    consensus: { epoch_blocks: 100, max_block_bytes: 8 * 1024 * 1024, block_interval_ms: 50 },
    accounts: keys.map((k) => ({ id: k.accountId, balance: 1_000_000_000_000 })),
    validators: [{ owner: keys[0]!.accountId, consensus_key: validatorKey, amount: 1_000_000 }],
    model: null,
    codec: null,
    vectors: conformanceVectors(),
  };
}

/** Signs `count` transfers spread over the senders, continuing each sender's nonce. */
function signTransfers(count: number, nonces: number[]): Envelope[] {
  const out: Envelope[] = [];
  for (let i = 0; i < count; i++) {
    const s = i % SENDERS;
    out.push(
      signBody({ kind: "transfer", chain_id: CHAIN, nonce: nonces[s]!++, to: sink, amount: 1 }, keys[s]!),
    );
  }
  return out;
}

for (const size of [1, 100, 1000]) {
  const dir = Deno.makeTempDirSync();
  const app = LedgerApp.open(`${dir}/state.sqlite`, genesis());
  const nonces = keys.map(() => 0);
  Deno.bench({
    name: `block apply with ${size} signed transfers (verify + finalizeBlock + commit, SQLite FULL)`,
    group: "block apply",
    n: size === 1000 ? 8 : 30,
    warmup: 1,
    fn(b) {
      const txs = signTransfers(size, nonces);
      const head = app.info();
      const block = {
        chain_id: CHAIN,
        height: head.height + 1,
        time: head.time + 1,
        prev_app_hash: head.app_hash,
        last_commit: [],
        txs,
      };
      b.start();
      const r = app.finalizeBlock(block);
      app.commit();
      b.end();
      if (r.results.some((x) => !x.ok)) {
        throw new Error(`a transfer failed: ${canonical(r.results.find((x) => !x.ok)!)}`);
      }
    },
  });
}

const TOTAL = 3000;
Deno.bench({
  name: `end to end: ${TOTAL} signed transfers broadcast over HTTP to a proposer until committed`,
  group: "end to end",
  n: 1,
  warmup: 0,
  async fn(b) {
    const dir = await Deno.makeTempDir();
    const node = await startNode({ home: dir, genesis: genesis(), intervalMs: 50, log: () => {} });
    const raws = signTransfers(TOTAL, keys.map(() => 0)).map((e) => canonicalBytes(e));
    const start = performance.now();
    b.start();
    let next = 0;
    const worker = async () => {
      while (next < raws.length) {
        const raw = raws[next++]!;
        const res = await fetch(`${node.url}/broadcast_tx`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: raw as Uint8Array<ArrayBuffer>,
        });
        const answer = JSON.parse(await res.text()) as { check: { ok: boolean; message?: string } };
        if (!answer.check.ok) throw new Error(`broadcast refused: ${answer.check.message}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const last = sha256Hex(raws.at(-1)!);
    while (node.app.store.tx(last) === null || node.app.store.tx(sha256Hex(raws.at(-2)!)) === null) {
      await new Promise((r) => setTimeout(r, 5));
    }
    b.end();
    const seconds = (performance.now() - start) / 1000;
    console.log(
      `end to end: ${TOTAL} transfers in ${seconds.toFixed(2)} s = ${
        (TOTAL / seconds).toFixed(0)
      } transfers/s (height ${node.app.info().height})`,
    );
    await node.stop();
    await Deno.remove(dir, { recursive: true });
  },
});
