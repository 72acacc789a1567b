import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { MAX_COHORT_BYTES } from "../../../core/limits.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { sponsor } from "../training/_harness.ts";
import { testBatch, type TestCohort, testCohort } from "./_cohort.ts";
import {
  activate,
  dataFacts,
  dataNet,
  nextCohort,
  proposalState,
  proposeTx,
  voters,
  voteTx,
} from "./_net.ts";

const BOND = DEVNET_PARAMS.claim_bond;
const FEE = DEVNET_PARAMS.fee;

/** The same cohort with its document replaced by `document` (metadata re-keyed). */
function withDocument(c: TestCohort, document: JsonObject): TestCohort {
  const metadata: JsonObject = { [id(document)]: document };
  for (const [root, b] of c.batches) metadata[root] = b as unknown as JsonValue;
  return { ...c, document: document as never, root: id(document), metadata };
}

Deno.test("an unapproved proposal expires: 90% of the bond refunded, 10% and the fee burned, cursors unchanged", () => {
  const net = dataNet();
  const cursors = dataFacts(net).cursors;
  const before = net.balance(sponsor).balance;
  const burned = net.totals().burned;
  const cohort = nextCohort(net, "a");
  const p = proposeTx(net, cohort);
  const proposed = net.height;
  net.ok(p);
  const proposalId = net.id(p);
  net.ok(voteTx(net, voters[0]!, proposalId), voteTx(net, voters[1]!, proposalId, false));
  const expires = proposalState(net, proposalId).expires as number;
  assert.equal(expires, proposed + DEVNET_PARAMS.proposal_blocks);
  net.until(expires + 1);
  assert.equal(proposalState(net, proposalId).status, "voting");
  net.block();
  assert.equal(proposalState(net, proposalId).status, "expired");
  assert.equal(net.balance(sponsor).balance, before - FEE - BOND / 10);
  // The proposal's fee and 10% of its bond, and the two votes' fees.
  assert.equal(net.totals().burned, burned + FEE + BOND / 10 + 2 * FEE);
  assert.deepEqual(dataFacts(net).cursors, cursors);
  assert.equal(dataFacts(net).proposal, null);
  assert.equal(dataFacts(net).cohort, null);
  net.rejects(voteTx(net, voters[2]!, proposalId), "invalid_transition");
  // Nothing was consumed: the same document can be proposed again.
  net.ok(proposeTx(net, cohort));
});

Deno.test("each rejected document has its own code and leaves the app hash unchanged", () => {
  const net = dataNet();
  const first = nextCohort(net, "first");
  activate(net, first);
  // Let the first cohort close so that a second one may be proposed.
  net.until((dataFacts(net).cohort as JsonObject).deadline as number + 2);
  assert.equal((dataFacts(net).cohort as JsonObject).status, "closed");
  const d = dataFacts(net);
  const at = (cursors: Record<string, number>, edit?: Parameters<typeof testCohort>[1]) =>
    testCohort({
      previous: d.data_root as string,
      tokenizer_root: net.model.manifest.tokenizer_root,
      cursors,
      salt: "second",
    }, edit);
  const cursors = d.cursors as Record<string, number>;
  const old = first.document.documents;
  const oldTrain = old.find((x) => x.role === "train")!;
  const cases: [string, TestCohort][] = [
    ["window_not_at_cursor", at({ ...cursors, "chat-train": cursors["chat-train"]! - 1 })],
    ["relabelled_heldout", at(cursors, (e) => (e.find((x) => x.role === "fresh")!.role = "train"))],
    ["document_reused", at(cursors, (e) => (e.find((x) => x.role === "train")!.id = oldTrain.id))],
    [
      "batch_reused",
      at(cursors, (e, batches) => {
        const x = e.find((y) => y.role === "train")!;
        batches.delete(x.batches[0]!);
        x.batches = [oldTrain.batches[0]!];
        batches.set(oldTrain.batches[0]!, first.batches.get(oldTrain.batches[0]!)!);
      }),
    ],
    [
      "position_reused",
      at(cursors, (e) => {
        const t = e.filter((y) => y.role === "train");
        t[1]!.row = t[0]!.row;
      }),
    ],
    [
      "incomplete_evaluation",
      at(cursors, (e) => (e.find((x) => x.role === "retention")!.omitted_targets = 1)),
    ],
    [
      "mixed_row_lengths",
      at(cursors, (e, batches) => {
        const x = e.filter((y) => y.role === "fresh")[3]!;
        const b = testBatch("seven", 7);
        batches.delete(x.batches[0]!);
        x.batches = [id(b as unknown as JsonValue)];
        batches.set(x.batches[0]!, b);
      }),
    ],
    [
      "codec_mismatch",
      testCohort({
        previous: d.data_root as string,
        tokenizer_root: "c1".repeat(32),
        cursors,
        salt: "second",
      }),
    ],
    ["wrong_document_count", at(cursors, (e) => e.splice(e.findIndex((x) => x.role === "retention"), 1))],
    // 2 training batches, but the schedule needs 3 fresh ones (4 steps, 1 replayed from the first cohort).
    ["invalid_proposal", at(cursors, (e) => e.splice(e.length - 6, 6))],
    [
      "wrong_previous",
      testCohort({
        previous: first.document.previous,
        tokenizer_root: net.model.manifest.tokenizer_root,
        cursors,
        salt: "second",
      }),
    ],
  ];
  for (const [code, cohort] of cases) {
    const message = net.rejects(proposeTx(net, cohort), code);
    assert.match(message, /^Cannot propose data: /, code);
  }
  const big = at(cursors);
  net.rejects(
    proposeTx(net, withDocument(big, { ...big.document, padding: "x".repeat(MAX_COHORT_BYTES) })),
    "too_large",
  );
  assert.equal(dataFacts(net).proposal, null);
  // The untouched second cohort is accepted.
  net.ok(proposeTx(net, at(cursors)));
});

Deno.test("on a chain whose genesis sets evaluation_documents 8, a cohort of 32 of each is wrong_document_count and one of 8 is accepted", () => {
  const net = dataNet({ evaluationDocuments: 8 });
  for (const n of [32, 7, 9]) {
    const message = net.rejects(
      proposeTx(net, nextCohort(net, `n${n}`, { evaluation: n })),
      "wrong_document_count",
    );
    assert.match(
      message,
      new RegExp(
        `^Cannot propose data: ${n} retention, ${n} fresh and 8 train documents, expected 8, 8 and 1-128$`,
      ),
    );
  }
  assert.equal(dataFacts(net).proposal, null);
  const eight = proposeTx(net, nextCohort(net, "eight", { evaluation: 8 }));
  net.ok(eight);
  assert.equal(dataFacts(net).proposal, net.id(eight));
  // The default chain (no evaluation_documents) still wants 32 of each.
  const plain = dataNet();
  plain.rejects(proposeTx(plain, nextCohort(plain, "p", { evaluation: 8 })), "wrong_document_count");
});

Deno.test("a proposer that cannot lock the bond is refused and keeps its nonce", () => {
  const net = dataNet();
  const poor = voters[3]!;
  const cohort = nextCohort(net, "a");
  assert.ok(net.balance(poor).balance < BOND);
  net.rejects(proposeTx(net, cohort, poor), "insufficient_funds");
  assert.equal(net.balance(poor).nonce, 0);
});
