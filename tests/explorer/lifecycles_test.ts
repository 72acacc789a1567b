/**
 * The data, evaluation and inference pages over real ledger state: file-backed ledgers driven by the ledger
 * tests' own flows (a cohort proposed, voted and activated, a step trained, an evaluation scored and decided;
 * a paid answer settled and one job still open), then read back read-only through the explorer.
 */
import { deepStrictEqual as assertEquals, equal, match } from "node:assert/strict";
import type { JsonObject } from "../../core/canonical.ts";
import { startExplorer } from "../../explorer/server.ts";
import { StateSource } from "../../explorer/state_source.ts";
import { DEVNET_PARAMS } from "../../workflows/params.ts";
import { evaluationAnswer, finishTx, open, scoreAll, trainedNet } from "../ledger/evaluation/_eval.ts";
import { inferenceNet, inferTx, prove, respondTx } from "../ledger/inference/_inference.ts";

async function page(url: string): Promise<string> {
  const res = await fetch(url);
  equal(res.status, 200, url);
  const m = /<main>([\s\S]*)<\/main>/.exec(await res.text());
  return (m?.[1] ?? "").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
}

Deno.test("the data and evaluation pages show a voted, activated cohort and a decided evaluation as the ledger recorded them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "explorer-eval-" });
  try {
    const path = `${dir}/state.sqlite`;
    const { net } = trainedNet({ path });
    const id = open(net);
    scoreAll(net, id, (side) => (side === "baseline" ? 2.0 : 1.9));
    net.ok(finishTx(net, id));
    const e = evaluationAnswer(net, id);
    const gate = (e.decision as JsonObject).gate as Record<string, JsonObject>;
    const lifecycle = net.lifecycle();
    net.app.close();
    const explorer = await startExplorer(StateSource.open(path), { port: 0 });
    try {
      const evaluation = await page(`${explorer.url}/evaluation`);
      match(evaluation, /decision promoted — gate/);
      for (const role of ["retention", "fresh"]) {
        const g = gate[role]!;
        match(
          evaluation,
          new RegExp(
            `${role}: ${g.pass ? "pass" : "fail"} S ${g.S} Q ${g.Q} G ${g.G} n 32 mean change ${
              String(g.mean_change_micronats)
            } micronats`,
          ),
        );
      }
      match(evaluation, new RegExp(`serving root after ${String(lifecycle.serving_root).slice(0, 12)}`));
      match(evaluation, new RegExp(`serving ${String(lifecycle.serving_root).slice(0, 12)}`));
      match(evaluation, /d \(micronats\) 0 2\.0000 1\.9000 -100001/);
      const data = await page(`${explorer.url}/data`);
      match(data, /Proposal \S+ · activated/);
      match(data, /activation needs strictly more than 2\/3: reached/);
      match(data, /Transactions \(propose_data, vote_data\)/);
      const cursors = ((lifecycle.data as JsonObject).cursors ?? {}) as Record<string, number>;
      for (const [source, at] of Object.entries(cursors)) match(data, new RegExp(`${source}: row ${at}`));
      equal(Object.keys(cursors).length > 0, true);
    } finally {
      await explorer.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the inference page shows each job's prompt and answer, its tokens, and the atoms paid and refunded", async () => {
  const dir = await Deno.makeTempDir({ prefix: "explorer-infer-" });
  try {
    const path = `${dir}/state.sqlite`;
    const net = inferenceNet({}, path);
    const infer = inferTx(net, { max_price: 1_000 });
    net.ok(infer);
    const jobId = net.id(infer);
    const h = net.height;
    net.ok(respondTx(net, jobId, prove([1, 2, 3, 4], 4)));
    net.until(h + DEVNET_PARAMS.challenge_blocks + 3);
    const open = inferTx(net, { prompt_ids: [10, 20, 30], max_price: 900 });
    net.ok(open);
    const state = (net.app.query(`/inference?id=${jobId}`) as JsonObject).state as JsonObject;
    equal(state.status, "settled");
    net.app.close();
    const price = DEVNET_PARAMS.price_per_token;
    // The test model pins no real codec (its tokenizer root is all zeros), so ids are shown, not text.
    for (const [prompt, answer] of [["[1,2,3,4]", "[4082,4082,4082,4082]"]] as const) {
      const explorer = await startExplorer(StateSource.open(path), { port: 0, objects: `${dir}/objects` });
      try {
        const text = await page(`${explorer.url}/inference`);
        match(text, /^Inference 2 jobs/);
        const rows = text.split(/(?= \S+… \d+ (?:settled|requested) )/);
        const done = rows.find((r) => / settled /.test(r))!;
        const waiting = rows.find((r) => / requested /.test(r))!;
        equal(
          done.includes(
            `${prompt} ${answer} 4 ${(4 * price).toLocaleString("en-US")} atoms paid ${
              (1_000 - 4 * price).toLocaleString("en-US")
            } atoms refunded`,
          ),
          true,
          done,
        );
        match(waiting, / requested .* — — — paid/);
      } finally {
        await explorer.close();
      }
    }
    // No objects folder was made by looking for a codec in it.
    assertEquals([...Deno.readDirSync(dir)].some((e) => e.name === "objects"), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
