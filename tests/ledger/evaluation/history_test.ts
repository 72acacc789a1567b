import assert from "node:assert/strict";
import { advanceEvaluation } from "../../../ledger/evaluation/advance.ts";
import { evaluationWriter, MAX_RETAINED_EVALUATIONS } from "../../../ledger/evaluation/store.ts";
import { LedgerWriter } from "../../../ledger/state/accessors.ts";
import { Overlay } from "../../../ledger/state/overlay.ts";
import { LedgerStore } from "../../../ledger/state/store.ts";
import { trainingWriter } from "../../../ledger/training/store.ts";
import { openEvaluation } from "../../../workflows/evaluation.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";

const root = (c: string) => c.repeat(64);
const docs = Array.from({ length: 32 }, (_, i) => i);

Deno.test("decided evaluations stay in a bounded history: beyond 16 the oldest are deleted", () => {
  const state = new LedgerWriter(new Overlay(new LedgerStore(":memory:")));
  const t = trainingWriter(state);
  t.setLifecycle({
    learning_root: root("b"),
    serving_root: root("a"),
    training_round: 3,
    data_root: root("d"),
    batches: 0,
    learning_rate: "0x1p-7",
    clip: "0x1p+0",
    period: { index: 0, steps: 3, growths: 0 },
    job: null,
  });
  const w = evaluationWriter(state);
  w.setFacts({
    live: null,
    pending: [],
    evaluated: null,
    serving: { model_root: root("a"), evaluation: null, since: 0 },
    retained: 0,
  });
  const ids: string[] = [];
  for (let k = 0; k < MAX_RETAINED_EVALUATIONS + 2; k++) {
    const id = (k + 1).toString(16).padStart(64, "0");
    ids.push(id);
    const params = { ...DEVNET_PARAMS, epoch_blocks: 1000, max_block_bytes: 1 << 20, block_interval_ms: 200 };
    const env = { height: 10 * k + 1, time: 0, params };
    const open = openEvaluation(
      {
        id,
        baseline: root("a"),
        candidate: root("b"),
        data_root: root("c"),
        layout: { retention: docs, fresh: docs },
      },
      env,
    );
    assert.equal(open.ok, true);
    const run = {
      id,
      cohort: root("c"),
      opened: env.height,
      ended: null,
      windows: { retention: [], fresh: [] },
      scores: [],
      state: open.ok ? open.state : null!,
    };
    w.setRun(run);
    w.setFacts({ ...w.facts()!, live: id });
    // Past its deadline: the tick fails it.
    const past = { ...env, height: env.height + DEVNET_PARAMS.evaluation_blocks + 1 };
    assert.deepEqual(advanceEvaluation(state, run, { type: "tick" }, past), { ok: true });
  }
  const f = w.facts()!;
  assert.equal(f.retained, MAX_RETAINED_EVALUATIONS);
  assert.equal(f.live, null);
  assert.deepEqual(w.history().map(([, id]) => id), ids.slice(2));
  assert.equal(w.run(ids[0]!), null);
  assert.equal(w.run(ids[1]!), null);
  assert.equal(w.run(ids[2]!)?.state.status, "decided");
  // A failed evaluation returns the learning root to the serving root and never moves the serving root.
  assert.equal(t.lifecycle()!.learning_root, root("a"));
  assert.equal(t.lifecycle()!.serving_root, root("a"));
  assert.equal(t.lifecycle()!.training_round, 3);
});
