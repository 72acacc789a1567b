import assert from "node:assert/strict";
import { reserve, training, type TrainingEvent, type TrainingState } from "../../workflows/training.ts";
import { escrowAfter } from "../../workflows/money.ts";
import { UPLOAD_CHUNK_BYTES } from "../../core/limits.ts";
import { Coverage, env, root } from "./_helpers.ts";

const cov = new Coverage(training);
const OWNER = "owner";
const WORKERS = ["w1", "w2", "w3"];
const CLAIM_ID = root("c");
const NEEDED = [root(1), root(2)];

function reserved(h = 100): TrainingState {
  const r = reserve(
    {
      id: root("a"),
      owner: OWNER,
      workers: WORKERS,
      data_root: root("d"),
      sequence_index: 3,
      batch: root("b"),
    },
    env(h),
  );
  assert.ok(r.ok);
  return r.state;
}

function claimTx(over: Partial<Extract<TrainingEvent, { type: "claim" }>> = {}): TrainingEvent {
  return {
    type: "claim",
    sender: OWNER,
    claim_id: CLAIM_ID,
    workers: WORKERS,
    data_root: root("d"),
    sequence_index: 3,
    record_root: root("e"),
    model_root: root("f"),
    work_identity: root(9),
    metadata_root: root(8),
    ...over,
  };
}

/** Reserved at 100, claimed at 110: deadline 116, expires 230. */
function claimed(): TrainingState {
  return cov.ok(reserved(), claimTx(), env(110));
}

function fraud(over: Record<string, unknown> = {}): TrainingEvent {
  return {
    type: "challenge",
    sender: "ref",
    kind: "fraud",
    stage: 1,
    block: null,
    phase: null,
    object_root: null,
    needed: NEEDED,
    ...over,
  } as TrainingEvent;
}

function upload(object: string, index: number, size = UPLOAD_CHUNK_BYTES, sender = "ref"): TrainingEvent {
  return { type: "upload", sender, object_root: object, index, size };
}

function seal(object: string, sender = "ref", digest = object): TrainingEvent {
  return { type: "seal", sender, object_root: object, digest };
}

/** Claimed, fraud-challenged at 112 (challenge deadline 132), both objects uploaded and sealed at 113. */
function resolving(): TrainingState {
  let s = cov.ok(claimed(), fraud(), env(112));
  s = cov.ok(s, upload(NEEDED[0]!, 0, 10), env(113));
  s = cov.ok(s, upload(NEEDED[1]!, 0, 10), env(113));
  s = cov.ok(s, seal(NEEDED[0]!), env(113));
  assert.equal(s.status, "uploading");
  return cov.ok(s, seal(NEEDED[1]!), env(113));
}

function allMoves(...states: TrainingState[]) {
  return states.flatMap((s) => s.moves);
}

Deno.test("reserve locks claim_bond and sets expires to H + lease_blocks", () => {
  assert.deepEqual(reserved(), {
    status: "reserved",
    assignment: {
      id: root("a"),
      owner: OWNER,
      workers: WORKERS,
      data_root: root("d"),
      sequence_index: 3,
      batch: root("b"),
      bond: 20_000_000,
      expires: 140,
    },
    moves: [{ op: "lock", account: OWNER, amount: 20_000_000 }],
  });
});

Deno.test("reserve is rejected for no workers, more than 64, duplicates, and an unscheduled batch", () => {
  const base = { id: root("a"), owner: OWNER, data_root: root("d"), sequence_index: 0, batch: root("b") };
  const cases: [Parameters<typeof reserve>[0], string][] = [
    [{ ...base, workers: [] }, "invalid_workers"],
    [{ ...base, workers: Array.from({ length: 65 }, (_, i) => `w${i}`) }, "invalid_workers"],
    [{ ...base, workers: ["w1", "w1"] }, "invalid_workers"],
    [{ ...base, workers: ["w1"], batch: "nope" }, "no_batch"],
  ];
  for (const [input, code] of cases) {
    const r = reserve(input, env(1));
    assert.equal(r.ok, false);
    if (!r.ok) assert.equal(r.code, code);
  }
  assert.ok(reserve({ ...base, workers: Array.from({ length: 64 }, (_, i) => `w${i}`) }, env(1)).ok);
});

Deno.test("an assignment expires only when H > expires, burning 10% and refunding 90%", () => {
  const s = reserved();
  cov.rejects(s, { type: "tick" }, env(140), "invalid_transition");
  const e = cov.ok(s, { type: "tick" }, env(141));
  assert.equal(e.status, "expired");
  assert.deepEqual(e.moves, [{ op: "release", account: OWNER, amount: 18_000_000 }, {
    op: "burn",
    amount: 2_000_000,
  }]);
  assert.equal(escrowAfter(allMoves(s, e)), 0);
});

Deno.test("claim opens a challenge window of challenge_blocks and a lifetime of max_claim_blocks", () => {
  const s = claimed();
  assert.equal(s.status, "claimed");
  if (s.status !== "claimed") return;
  assert.deepEqual(s.claim, {
    id: CLAIM_ID,
    owner: OWNER,
    bond: 20_000_000,
    stages: 3,
    deadline: 116,
    expires: 230,
    challenge: null,
  });
  assert.deepEqual(s.work, {
    record_root: root("e"),
    model_root: root("f"),
    work_identity: root(9),
    metadata_root: root(8),
  });
  assert.deepEqual(s.moves, []);
  // Claiming exactly at the lease's last height is allowed.
  assert.equal(cov.ok(reserved(), claimTx(), env(140)).status, "claimed");
});

Deno.test("claim is rejected for another sender, after expiry, other workers, other data, or a malformed root", () => {
  const s = reserved();
  cov.rejects(s, claimTx({ sender: "mallory" }), env(110), "not_owner");
  cov.rejects(s, claimTx(), env(141), "expired");
  cov.rejects(s, claimTx({ workers: ["w1", "w3", "w2"] }), env(110), "invalid_workers");
  cov.rejects(s, claimTx({ workers: ["w1", "w2"] }), env(110), "invalid_workers");
  cov.rejects(s, claimTx({ data_root: root("0") }), env(110), "invalid_record");
  cov.rejects(s, claimTx({ sequence_index: 4 }), env(110), "invalid_record");
  cov.rejects(s, claimTx({ record_root: "E".repeat(64) }), env(110), "invalid_record");
});

Deno.test("a reserved assignment rejects challenge, upload, seal and resolve", () => {
  const s = reserved();
  cov.rejects(s, fraud(), env(110), "invalid_transition");
  cov.rejects(s, upload(NEEDED[0]!, 0), env(110), "invalid_transition");
  cov.rejects(s, seal(NEEDED[0]!), env(110), "invalid_transition");
  cov.rejects(s, { type: "resolve", sender: "v", verdict: "match" }, env(110), "invalid_transition");
});

Deno.test("an unchallenged claim past its deadline settles: bond refunded, reward minted 20% to verifiers, rest split with remainder first", () => {
  const s = claimed();
  cov.rejects(s, claimTx(), env(111), "busy");
  cov.rejects(s, { type: "tick" }, env(116), "invalid_transition");
  const done = cov.ok(s, { type: "tick" }, env(117));
  assert.equal(done.status, "settled");
  assert.deepEqual(done.moves, [
    { op: "release", account: OWNER, amount: 20_000_000 },
    { op: "mint_verifiers", amount: 200_000 },
    { op: "mint", account: "w1", amount: 266_667 },
    { op: "mint", account: "w2", amount: 266_667 },
    { op: "mint", account: "w3", amount: 266_666 },
  ]);
  assert.equal(escrowAfter(allMoves(reserved(), s, done)), 0);
});

Deno.test("a fraud challenge locks challenge_bond and waits availability_blocks for its uploads", () => {
  const s = cov.ok(claimed(), fraud(), env(112));
  assert.equal(s.status, "challenged");
  if (s.status !== "challenged") return;
  assert.deepEqual(s.claim.challenge, {
    owner: "ref",
    kind: "fraud",
    stage: 1,
    block: null,
    phase: null,
    object_root: null,
    bond: 2_000_000,
    needed: NEEDED,
    uploads: [],
    sealed: [],
    deadline: 132,
  });
  assert.deepEqual(s.moves, [{ op: "lock", account: "ref", amount: 2_000_000 }]);
  // The window's last height still accepts a challenge.
  assert.equal(cov.ok(claimed(), fraud(), env(116)).status, "challenged");
});

Deno.test("a challenge is rejected when one is live, after the window, or naming a bad stage, object or needed list", () => {
  const c = claimed();
  cov.rejects(cov.ok(c, fraud(), env(112)), fraud({ sender: "ref2" }), env(113), "invalid_transition");
  cov.rejects(c, fraud(), env(117), "expired");
  cov.rejects(c, fraud({ stage: 3 }), env(112), "invalid_challenge");
  cov.rejects(c, fraud({ stage: -1 }), env(112), "invalid_challenge");
  cov.rejects(c, fraud({ object_root: root(1) }), env(112), "invalid_challenge");
  cov.rejects(c, fraud({ needed: [] }), env(112), "invalid_challenge");
  cov.rejects(c, fraud({ needed: [root(2), root(1)] }), env(112), "invalid_challenge");
  cov.rejects(c, fraud({ needed: [root(1), root(1)] }), env(112), "invalid_challenge");
  cov.rejects(
    c,
    fraud({ kind: "availability", object_root: null, needed: [root(1)] }),
    env(112),
    "invalid_challenge",
  );
  cov.rejects(
    c,
    fraud({ kind: "availability", object_root: root(1), needed: [root(2)] }),
    env(112),
    "invalid_challenge",
  );
  cov.rejects(c, fraud({ kind: "other" }), env(112), "invalid_challenge");
});

Deno.test("uploads must come from the publisher, in order, for a needed object, each earlier chunk exactly 1 MiB", () => {
  const c = cov.ok(claimed(), fraud(), env(112));
  cov.rejects(c, upload(NEEDED[0]!, 0, 10, OWNER), env(113), "not_owner");
  cov.rejects(c, upload(root(7), 0), env(113), "invalid_upload");
  cov.rejects(c, upload(NEEDED[0]!, 1), env(113), "invalid_upload");
  cov.rejects(c, upload(NEEDED[0]!, 0, 0), env(113), "invalid_upload");
  cov.rejects(c, upload(NEEDED[0]!, 0, UPLOAD_CHUNK_BYTES + 1), env(113), "invalid_upload");
  cov.rejects(c, upload(NEEDED[0]!, 0), env(133), "expired");
  const one = cov.ok(c, upload(NEEDED[0]!, 0), env(113));
  assert.equal(one.status, "uploading");
  const two = cov.ok(one, upload(NEEDED[0]!, 1, 5), env(113));
  if (two.status !== "uploading") throw new Error(two.status);
  assert.deepEqual(two.claim.challenge?.uploads, [{
    object_root: NEEDED[0],
    chunks: 2,
    bytes: UPLOAD_CHUNK_BYTES + 5,
  }]);
  cov.rejects(two, upload(NEEDED[0]!, 2), env(113), "invalid_upload"); // the previous chunk was short
});

Deno.test("an object holds at most 256 chunks", () => {
  let s = cov.ok(claimed(), fraud(), env(112));
  for (let i = 0; i < 256; i++) s = cov.ok(s, upload(NEEDED[0]!, i), env(113));
  cov.rejects(s, upload(NEEDED[0]!, 256), env(113), "invalid_upload");
});

Deno.test("seal needs chunks, the publisher and a matching digest; a sealed object takes no more chunks", () => {
  let s = cov.ok(claimed(), fraud(), env(112));
  s = cov.ok(s, upload(NEEDED[0]!, 0, 10), env(113));
  cov.rejects(s, seal(NEEDED[1]!), env(113), "invalid_upload");
  cov.rejects(s, seal(NEEDED[0]!, OWNER), env(113), "not_owner");
  cov.rejects(s, seal(NEEDED[0]!, "ref", root(5)), env(113), "seal_mismatch");
  cov.rejects(s, { type: "resolve", sender: "v", verdict: "match" }, env(113), "not_sealed");
  const sealed = cov.ok(s, seal(NEEDED[0]!), env(113));
  assert.equal(sealed.status, "uploading");
  cov.rejects(sealed, upload(NEEDED[0]!, 1), env(113), "invalid_upload");
  cov.rejects(sealed, seal(NEEDED[0]!), env(113), "invalid_upload");
});

Deno.test("a mismatch verdict rejects the claim: challenger gets its bond plus half the claim bond, the rest burns", () => {
  const s = resolving();
  assert.equal(s.status, "resolving");
  const r = cov.ok(
    s,
    { type: "resolve", sender: "v", verdict: "mismatch", what: "optimizer update" },
    env(120),
  );
  assert.equal(r.status, "rejected");
  if (r.status !== "rejected") return;
  assert.equal(r.reason, "mismatch: optimizer update");
  assert.deepEqual(r.moves, [
    { op: "release", account: "ref", amount: 2_000_000 },
    { op: "release", account: "ref", amount: 10_000_000 },
    { op: "burn", amount: 10_000_000 },
  ]);
});

Deno.test("a match verdict burns the challenger's bond and reopens the window at H + challenge_blocks", () => {
  const r = cov.ok(resolving(), { type: "resolve", sender: "v", verdict: "match" }, env(120));
  assert.equal(r.status, "claimed");
  if (r.status !== "claimed") return;
  assert.equal(r.claim.deadline, 126);
  assert.equal(r.claim.challenge, null);
  assert.deepEqual(r.moves, [{ op: "burn", amount: 2_000_000 }]);
  const done = cov.ok(r, { type: "tick" }, env(127));
  assert.equal(done.status, "settled");
});

Deno.test("resolve is rejected after the challenge deadline, with an unknown forged part, or without a fraud challenge", () => {
  const s = resolving();
  cov.rejects(s, { type: "resolve", sender: "v", verdict: "match" }, env(133), "expired");
  cov.rejects(
    s,
    { type: "resolve", sender: "v", verdict: "mismatch", what: "vibes" } as unknown as TrainingEvent,
    env(120),
    "bad_request",
  );
  cov.rejects(claimed(), { type: "resolve", sender: "v", verdict: "match" }, env(112), "invalid_transition");
});

Deno.test("a fraud challenge not resolved by its deadline burns the challenger's bond and reopens the window", () => {
  const s = resolving();
  cov.rejects(s, { type: "tick" }, env(132), "invalid_transition");
  const r = cov.ok(s, { type: "tick" }, env(133));
  assert.equal(r.status, "claimed");
  if (r.status !== "claimed") return;
  assert.equal(r.claim.deadline, 139);
  assert.deepEqual(r.moves, [{ op: "burn", amount: 2_000_000 }]);
  const c = cov.ok(claimed(), fraud(), env(112));
  assert.equal(cov.ok(c, { type: "tick" }, env(133)).status, "claimed");
  const u = cov.ok(c, upload(NEEDED[0]!, 0, 1), env(113));
  assert.equal(cov.ok(u, { type: "tick" }, env(133)).status, "claimed");
});

Deno.test("an answered availability challenge refunds the challenger and reopens the window", () => {
  const obj = root(6);
  const avail = {
    type: "challenge",
    sender: "ref",
    kind: "availability",
    stage: 0,
    block: null,
    phase: null,
    object_root: obj,
    needed: [obj],
  } as const;
  let s = cov.ok(claimed(), avail, env(112));
  cov.rejects(s, upload(obj, 0, 10, "ref"), env(113), "not_owner");
  s = cov.ok(s, upload(obj, 0, 10, OWNER), env(113));
  cov.rejects(s, { type: "resolve", sender: "v", verdict: "match" }, env(113), "invalid_transition");
  const answered = cov.ok(s, seal(obj, OWNER), env(114));
  assert.equal(answered.status, "claimed");
  if (answered.status !== "claimed") return;
  assert.equal(answered.claim.deadline, 120);
  assert.deepEqual(answered.moves, [{ op: "release", account: "ref", amount: 2_000_000 }]);
  const done = cov.ok(answered, { type: "tick" }, env(121));
  assert.equal(
    escrowAfter(allMoves(reserved(), claimed(), cov.ok(claimed(), avail, env(112)), answered, done)),
    0,
  );
});

Deno.test("an unanswered availability challenge past its deadline rejects the claim with slash", () => {
  const obj = root(6);
  const avail = {
    type: "challenge",
    sender: "ref",
    kind: "availability",
    stage: 2,
    block: null,
    phase: null,
    object_root: obj,
    needed: [obj],
  } as const;
  const s = cov.ok(claimed(), avail, env(112));
  const r = cov.ok(s, { type: "tick" }, env(133));
  assert.equal(r.status, "rejected");
  if (r.status !== "rejected") return;
  assert.equal(r.reason, "availability challenge unanswered");
  assert.deepEqual(r.moves, [
    { op: "release", account: "ref", amount: 2_000_000 },
    { op: "release", account: "ref", amount: 10_000_000 },
    { op: "burn", amount: 10_000_000 },
  ]);
  const u = cov.ok(s, upload(obj, 0, 10, OWNER), env(113));
  assert.equal(cov.ok(u, { type: "tick" }, env(133)).status, "rejected");
});

Deno.test("a claim past its absolute expiry closes unpaid: publisher refunded, challenger's bond burned", () => {
  // Repeated matches keep reopening the window until the claim's lifetime (230) runs out.
  let s = claimed();
  let h = 112;
  while (h + 20 < 230) {
    s = cov.ok(s, fraud(), env(h));
    s = cov.ok(s, { type: "tick" }, env(h + 21));
    h += 22;
  }
  s = cov.ok(s, fraud(), env(h));
  const u = cov.ok(s, upload(NEEDED[0]!, 0, 1), env(h));
  const r = cov.ok(u, { type: "tick" }, env(231));
  assert.equal(r.status, "expired");
  assert.deepEqual(r.moves, [{ op: "release", account: OWNER, amount: 20_000_000 }, {
    op: "burn",
    amount: 2_000_000,
  }]);
  assert.equal(cov.ok(s, { type: "tick" }, env(231)).status, "expired");
  const full = resolving();
  assert.equal(cov.ok(full, { type: "tick" }, env(231)).status, "expired");
  // An unchallenged claim whose reopened window outlives its lifetime also closes unpaid.
  const late = cov.ok(cov.ok(cov.ok(claimed(), fraud(), env(112)), { type: "tick" }, env(226)), {
    type: "tick",
  }, env(231));
  assert.equal(late.status, "expired");
  assert.deepEqual(late.moves, [{ op: "release", account: OWNER, amount: 20_000_000 }]);
});

Deno.test("settled, rejected and expired jobs reject every event", () => {
  const settled = cov.ok(claimed(), { type: "tick" }, env(117));
  const rejected = cov.ok(resolving(), {
    type: "resolve",
    sender: "v",
    verdict: "mismatch",
    what: "forward output",
  }, env(120));
  const expired = cov.ok(reserved(), { type: "tick" }, env(141));
  for (const s of [settled, rejected, expired]) {
    for (
      const e of [claimTx(), fraud(), upload(NEEDED[0]!, 0), seal(NEEDED[0]!), { type: "tick" } as const]
    ) {
      cov.rejects(s, e, env(500), "invalid_transition");
    }
  }
});

Deno.test("every declared training edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});
