import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { consSeeds, testGenesis } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, startProc, stopProc } from "../e2e/_ledger_procs.ts";
import { flood, floodMaker, rssOf } from "./_flood.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
/**
 * The old proposer kept every refused envelope: 150 of them grew it by ~285 MB (1.9 MB each, for good); the
 * slow suite sends the 3,000 of the report (which killed it at 2,252). The flood's first third brings the
 * resident memory to its working level; the other two thirds may raise its peak by at most `GROWTH_BOUND`
 * more: a proposer that keeps what it refuses grows by 1.9 MB an envelope (~190 MB over the last 100),
 * where one that does not reuses the memory the first third's garbage took. The growth from the start is no
 * such measure: it is the allocators' and the garbage collector's high-water mark (161-243 MB for 150
 * envelopes, more under load, and it stays after the flood), bounded only, with the rest, by `RSS_BOUND`.
 */
const COUNT = SLOW ? 3_000 : 150;
const MB = 1024 * 1024;
const RSS_BOUND = 400 * MB;
const GROWTH_BOUND = 120 * MB;
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
    let firstPeak = NaN; // the highest resident memory over the first third of the flood
    try {
      const first = await flood(proposer.url, make, COUNT / 3);
      firstPeak = peak = Math.max(peak, rssOf(pid));
      const rest = await flood(proposer.url, (i) => make(COUNT / 3 + i), COUNT - COUNT / 3);
      codes = new Map([...rest].map(([code, n]) => [code, n + (first.get(code) ?? 0)]));
      for (const [code, n] of first) if (!codes.has(code)) codes.set(code, n);
    } finally {
      clearInterval(sampler);
      flooding = false;
      await watcher;
    }
    assertEquals([...codes], [["invalid_body", COUNT]]);
    const end = await getJson<{ height: number; mempool: number }>(`${proposer.url}/status`);
    console.log(
      `RSS ${(baseline / MB).toFixed(0)} MB before, ${
        (firstPeak / MB).toFixed(0)
      } MB at most over the first third, ${
        (peak / MB).toFixed(0)
      } MB at most; blocks ${start} → ${end.height}, longest stall ${stall} ms, ${failedPolls} failed status polls`,
    );
    equal(peak < RSS_BOUND, true, `peak RSS ${peak} bytes, expected below ${RSS_BOUND}`);
    equal(
      peak - firstPeak < GROWTH_BOUND,
      true,
      `the last two thirds of the flood raised the peak RSS by ${
        peak - firstPeak
      } bytes, expected below ${GROWTH_BOUND}`,
    );
    equal(end.mempool, 0);
    equal(stall < STALL_BOUND_MS, true, `the height stood still for ${stall} ms during the flood`);
    equal(end.height > start, true);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
