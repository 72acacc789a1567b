import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { consSeeds, testGenesis } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, startProc, stopProc } from "../e2e/_ledger_procs.ts";
import { flood, floodMaker, rssOf } from "./_flood.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
/**
 * The old proposer kept every refused envelope: 150 of them grew it by ~285 MB, more than the growth bound;
 * the slow suite sends the 3,000 of the report (which killed it at 2,252).
 */
const COUNT = SLOW ? 3_000 : 150;
const MB = 1024 * 1024;
const RSS_BOUND = 400 * MB;
const GROWTH_BOUND = 200 * MB;
/** The longest the height may stand still while the flood runs (blocks come every 100 ms). */
const STALL_BOUND_MS = 5_000;

Deno.test(`${COUNT} signed 1.9 MB envelopes refused as invalid_body leave the proposer under 400 MB and producing blocks`, async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(
      dir,
      testGenesis({}, { max_block_bytes: 4 * 1024 * 1024 }),
      consSeeds.slice(0, 1),
    );
    const proposer = await startProc(`${dir}/v0`, path, { intervalMs: 100 });
    procs.push(proposer);
    const pid = proposer.child.pid;
    const make = floodMaker("test-chain");
    const baseline = rssOf(pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    // The height is polled one request at a time until the flood ends, and the last poll is awaited before
    // the proposer is stopped (an interval's request still in flight then failed the test). A poll that fails
    // counts as no progress, so the stall bound also covers a proposer that stops answering.
    let seen = { height: -1, at: Date.now() };
    let stall = 0;
    let failedPolls = 0;
    let flooding = true;
    const watcher = (async () => {
      while (flooding) {
        const height = await getJson<{ height: number }>(`${proposer.url}/status`).then(
          (s) => s.height,
          () => (failedPolls++, seen.height),
        );
        const now = Date.now();
        if (height !== seen.height) seen = { height, at: now };
        stall = Math.max(stall, now - seen.at);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const start = (await getJson<{ height: number }>(`${proposer.url}/status`)).height;
    let codes: Map<string, number>;
    try {
      codes = await flood(proposer.url, make, COUNT);
    } finally {
      clearInterval(sampler);
      flooding = false;
      await watcher;
    }
    assertEquals([...codes], [["invalid_body", COUNT]]);
    const end = await getJson<{ height: number; mempool: number }>(`${proposer.url}/status`);
    console.log(
      `RSS ${(baseline / MB).toFixed(0)} MB before, ${
        (peak / MB).toFixed(0)
      } MB at most; blocks ${start} → ${end.height}, longest stall ${stall} ms, ${failedPolls} failed status polls`,
    );
    equal(peak < RSS_BOUND, true, `peak RSS ${peak} bytes, expected below ${RSS_BOUND}`);
    equal(
      peak - baseline < GROWTH_BOUND,
      true,
      `RSS grew by ${peak - baseline} bytes, expected below ${GROWTH_BOUND}`,
    );
    equal(end.mempool, 0);
    equal(stall < STALL_BOUND_MS, true, `the height stood still for ${stall} ms during the flood`);
    equal(end.height > start, true);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
