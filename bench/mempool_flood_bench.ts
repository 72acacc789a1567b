/**
 * The proposer under attack: a real validator process is flooded with signed 1.9 MB envelopes that it must
 * refuse (`invalid_body`), over 4 connections, for a bounded time (about 3 s per case). The bench times 5
 * consecutive blocks while the flood runs, against the same 5 blocks of the idle proposer (the baseline in
 * the same run), and prints the longest gap between blocks and the proposer's peak RSS. Healthy: the ratio
 * stays near 1, the longest gap near the block interval, the RSS flat.
 *
 * Run: `deno bench -A bench/mempool_flood_bench.ts`.
 */
import { consSeeds, testGenesis } from "../tests/ledger/_fixture.ts";
import { getJson, prepare, startProc } from "../tests/e2e/_ledger_procs.ts";
import { floodMaker, rssOf } from "../tests/faults/_flood.ts";

const INTERVAL_MS = 100;
const BLOCKS = 5;
const dir = Deno.makeTempDirSync();
const path = await prepare(dir, testGenesis({}, { max_block_bytes: 4 * 1024 * 1024 }), consSeeds.slice(0, 1));
const proposer = await startProc(`${dir}/v0`, path, { intervalMs: INTERVAL_MS });
const make = floodMaker("test-chain");
let sent = 0;
let peak = rssOf(proposer.child.pid);
let longestGap = 0;

/** Waits for `BLOCKS` more blocks, recording the longest gap between two of them. */
async function nextBlocks(): Promise<void> {
  let height = (await getJson<{ height: number }>(`${proposer.url}/status`)).height;
  let last = performance.now();
  for (let i = 0; i < BLOCKS; i++) {
    await fetch(`${proposer.url}/block?height=${height + 1}&wait=10000`).then((r) => r.body?.cancel());
    const now = performance.now();
    longestGap = Math.max(longestGap, now - last);
    last = now;
    height++;
    peak = Math.max(peak, rssOf(proposer.child.pid));
  }
}

Deno.bench({
  name: `${BLOCKS} blocks of an idle proposer`,
  group: "block gaps",
  baseline: true,
  n: 3,
  warmup: 0,
}, async () => {
  await nextBlocks();
});

Deno.bench({
  name: `${BLOCKS} blocks while 4 connections flood refused 1.9 MB envelopes`,
  group: "block gaps",
  n: 3,
  warmup: 0,
  async fn(b) {
    let flooding = true;
    longestGap = 0;
    const lane = async () => {
      while (flooding) {
        const res = await fetch(`${proposer.url}/broadcast_tx`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: make(sent++) as Uint8Array<ArrayBuffer>,
        });
        await res.body?.cancel();
      }
    };
    const lanes = Array.from({ length: 4 }, lane);
    b.start();
    await nextBlocks();
    b.end();
    flooding = false;
    await Promise.all(lanes);
    console.log(
      `flood: ${sent} envelopes so far, longest block gap ${
        longestGap.toFixed(0)
      } ms (interval ${INTERVAL_MS}), peak RSS ${(peak / 2 ** 20).toFixed(0)} MB`,
    );
  },
});

// Deno.bench has no teardown: the proposer goes when this process unloads.
globalThis.addEventListener("unload", () => {
  proposer.child.kill("SIGKILL");
  Deno.removeSync(dir, { recursive: true });
});
