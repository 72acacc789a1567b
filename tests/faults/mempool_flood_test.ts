import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { consSeeds, testGenesis } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, startProc, stopProc } from "../e2e/_ledger_procs.ts";
import { flood, floodMaker, rssOf } from "./_flood.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
/** 250 envelopes already grew the old proposer by ~475 MB; the slow suite sends the 3,000 of the report. */
const COUNT = SLOW ? 3_000 : 250;
const RSS_BOUND = 400 * 1024 * 1024;

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
    let peak = rssOf(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    const heights: number[] = [];
    const watcher = setInterval(async () => {
      heights.push((await getJson<{ height: number }>(`${proposer.url}/status`)).height);
    }, 500);
    const start = (await getJson<{ height: number }>(`${proposer.url}/status`)).height;
    let codes: Map<string, number>;
    try {
      codes = await flood(proposer.url, make, COUNT);
    } finally {
      clearInterval(sampler);
      clearInterval(watcher);
    }
    assertEquals([...codes], [["invalid_body", COUNT]]);
    const end = await getJson<{ height: number; mempool: number }>(`${proposer.url}/status`);
    console.log(`peak RSS ${(peak / 2 ** 20).toFixed(0)} MB, blocks ${start} → ${end.height}`);
    equal(peak < RSS_BOUND, true, `peak RSS ${peak} bytes, expected below ${RSS_BOUND}`);
    equal(end.mempool, 0);
    // Blocks kept coming during the flood: no half-second sample saw the height stand still twice in a row.
    for (let i = 2; i < heights.length; i++) {
      equal(
        heights[i]! > heights[i - 2]!,
        true,
        `height stalled at ${heights[i]} (samples ${heights.join(",")})`,
      );
    }
    equal(end.height > start, true);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
