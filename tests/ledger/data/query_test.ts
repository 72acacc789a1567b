import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { ChainClient } from "../../../actors/common/chain.ts";
import { cohortSchedule } from "../../../workflows/cohort.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { reserveTx } from "../training/_flow.ts";
import { withRpc } from "../training/_rpc.ts";
import { sponsor } from "../training/_harness.ts";
import { dataNet, nextCohort, proposeTx, voters, voteTx } from "./_net.ts";

Deno.test("/lifecycle, /data, /data/proposal, /data/consumed and /batch show the proposal, the cohort and its exact batches", async () => {
  const net = dataNet();
  const first = (net.lifecycle().data as JsonObject).data_root as string;
  const cohort = nextCohort(net, "a");
  const p = proposeTx(net, cohort);
  const proposed = net.height;
  net.ok(p);
  const proposalId = net.id(p);
  await withRpc(net, async (url) => {
    const chain = new ChainClient(url);
    const pending = await chain.dataProposal();
    assert.equal(pending?.proposal_id, proposalId);
    assert.deepEqual(pending?.document, cohort.document as unknown as JsonObject);
    const state = pending!.state;
    assert.deepEqual(
      [
        state.status,
        state.proposer,
        state.data_root,
        state.previous,
        state.bond,
        state.proposed,
        state.expires,
      ],
      [
        "proposed",
        sponsor.accountId,
        cohort.root,
        first,
        DEVNET_PARAMS.claim_bond,
        proposed,
        proposed + DEVNET_PARAMS.proposal_blocks,
      ],
    );
    assert.deepEqual(state.votes, []);
    assert.equal(await chain.data(), null);
    assert.equal(await chain.dataProposal("ab".repeat(32)), null);
    assert.equal((await chain.lifecycle()).data?.proposal, proposalId);
  });
  net.ok(...voters.slice(0, 3).map((v) => voteTx(net, v, proposalId)));
  net.until(proposed + DEVNET_PARAMS.activation_blocks + 1);
  net.ok(reserveTx(net));
  await withRpc(net, async (url) => {
    const chain = new ChainClient(url);
    const train = cohort.document.documents.filter((d) => d.role === "train").flatMap((d) => d.batches);
    const schedule = cohortSchedule(cohort.root, train, null, DEVNET_PARAMS.steps_per_cohort);
    const data = await chain.data();
    assert.deepEqual(data, {
      data_root: cohort.root,
      proposal: proposalId,
      status: "training",
      activated: proposed + DEVNET_PARAMS.activation_blocks,
      deadline: proposed + DEVNET_PARAMS.activation_blocks + 60,
      ended: null,
      position: 0,
      steps: schedule.length,
      schedule,
      batches: schedule.map((s) => cohort.batches.get(s.batch) as unknown as JsonValue),
    });
    assert.deepEqual(await chain.data(cohort.root), data);
    assert.equal(await chain.data("ab".repeat(32)), null);
    const { batches: _, ...shown } = data!;
    const l = await chain.lifecycle();
    assert.equal(l.data_root, cohort.root);
    assert.deepEqual(l.data, {
      data_root: cohort.root,
      cursors: Object.fromEntries(cohort.document.windows.map((w) => [w.source, w.end])),
      evaluation_documents: 32,
      proposal: null,
      cohort: shown as never,
    });
    assert.deepEqual(
      [l.assignment?.data_root, l.assignment?.sequence_index, l.assignment?.batch],
      [cohort.root, 0, schedule[0]!.batch],
    );
    assert.deepEqual(await chain.batch(schedule[0]!.batch), cohort.batches.get(schedule[0]!.batch));
    const doc = cohort.document.documents[5]!;
    const yes = { consumed: true, data_root: cohort.root };
    assert.deepEqual(await chain.consumed({ document: doc.id }), yes);
    assert.deepEqual(await chain.consumed({ batch: doc.batches[0]! }), yes);
    assert.deepEqual(await chain.consumed({ source: doc.source, row: doc.row }), yes);
    const no = { consumed: false, data_root: null };
    assert.deepEqual(await chain.consumed({ document: "ab".repeat(32) }), no);
    // A row of the window that no document used was skipped, not consumed.
    const lastRow = cohort.document.windows[0]!.end - 1;
    assert.deepEqual(await chain.consumed({ source: cohort.document.windows[0]!.source, row: lastRow }), no);
    assert.equal(net.app.query("/data/consumed?document=xyz"), null);
    assert.equal(net.app.query(`/data/consumed?document=${doc.id}&batch=${doc.batches[0]}`), null);
    const activated = await chain.dataProposal(proposalId);
    assert.equal(activated?.state.status, "activated");
    assert.equal(await chain.dataProposal(), null);
  });
});
