/**
 * A training ledger with a data lifecycle (the sources of `_cohort.ts`, cursors at 0) and helpers to propose,
 * vote and activate test cohorts. Four validator owners with one validator each by default (power 4 each).
 */
import type { JsonObject } from "../../../core/canonical.ts";
import type { Envelope } from "../../../ledger/envelope.ts";
import { type AccountKey, keyFromSeed } from "../../../ledger/keys.ts";
import { cons } from "../_fixture.ts";
import { Net, type NetValidator, sponsor } from "../training/_harness.ts";
import { SOURCES, type TestCohort, testCohort } from "./_cohort.ts";

/** Four validator owners (funded for fees). */
export const voters: AccountKey[] = [0, 1, 2, 3].map((i) => keyFromSeed((0xe0 + i).toString(16).repeat(32)));

/** The genesis data section of the tests. */
export function dataSection(trainingBlocks = 60, evaluationDocuments?: number): JsonObject {
  return {
    sources: SOURCES as unknown as JsonObject[],
    cursors: { "chat-retention": 0, "chat-train": 0 },
    training_blocks: trainingBlocks,
    ...(evaluationDocuments === undefined ? {} : { evaluation_documents: evaluationDocuments }),
  };
}

/** One validator per owner. */
export function equalOwners(): NetValidator[] {
  return voters.map((owner, i) => ({ owner, key: cons[i]! }));
}

/** A data-lifecycle ledger. */
export function dataNet(
  opts: {
    validators?: NetValidator[];
    params?: JsonObject;
    consensus?: JsonObject;
    trainingBlocks?: number;
    /** The genesis `data.evaluation_documents` (absent by default: 32). */
    evaluationDocuments?: number;
    path?: string;
  } = {},
): Net {
  return new Net({
    ...(opts.path === undefined ? {} : { path: opts.path }),
    validators: opts.validators ?? equalOwners(),
    ownerBalance: 10_000_000,
    params: opts.params ?? {},
    consensus: opts.consensus ?? {},
    data: dataSection(opts.trainingBlocks, opts.evaluationDocuments),
  });
}

/** The `data` part of `/lifecycle`. */
export function dataFacts(net: Net): JsonObject {
  return net.lifecycle().data as JsonObject;
}

/** A valid cohort at the chain's current data root and cursors. */
export function nextCohort(
  net: Net,
  salt: string,
  opts: { train?: number; evaluation?: number } = {},
  edit?: Parameters<typeof testCohort>[1],
): TestCohort {
  const d = dataFacts(net);
  return testCohort({
    previous: d.data_root as string,
    tokenizer_root: net.model.manifest.tokenizer_root,
    cursors: d.cursors as Record<string, number>,
    salt,
    ...opts,
  }, edit);
}

/** `propose_data` of `cohort` by the sponsor. */
export function proposeTx(net: Net, cohort: TestCohort, key: AccountKey = sponsor): Envelope {
  return net.tx(key, "propose_data", { data_root: cohort.root, metadata: cohort.metadata });
}

/** `vote_data` by `owner`. */
export function voteTx(
  net: Net,
  owner: AccountKey,
  proposalId: string,
  approve = true,
  offset = 0,
): Envelope {
  return net.tx(owner, "vote_data", { proposal_id: proposalId, approve }, offset);
}

/** Proposes `cohort`, votes yes with `yes` owners in the next block, and runs until it activates; its id. */
export function activate(
  net: Net,
  cohort: TestCohort,
  yes: readonly AccountKey[] = voters.slice(0, 3),
): string {
  const p = proposeTx(net, cohort);
  net.ok(p);
  const proposalId = net.id(p);
  net.ok(...yes.map((o) => voteTx(net, o, proposalId)));
  for (let i = 0; i < 10 && (dataFacts(net).cohort as JsonObject | null)?.data_root !== cohort.root; i++) {
    net.block();
  }
  if ((dataFacts(net).cohort as JsonObject | null)?.data_root !== cohort.root) {
    throw new Error(`cohort ${cohort.root} did not activate`);
  }
  return proposalId;
}

/** The `/data/proposal?id=` state of a proposal. */
export function proposalState(net: Net, proposalId: string): JsonObject {
  return (net.app.query(`/data/proposal?id=${proposalId}`) as JsonObject).state as JsonObject;
}
