import assert from "node:assert/strict";
import { grow, growth, type GrowthEvent, type GrowthState } from "../../workflows/growth.ts";
import { escrowAfter } from "../../workflows/money.ts";
import { Coverage, env, root } from "./_helpers.ts";

const cov = new Coverage(growth);
const OWNER = "sponsor";
const INPUT = {
  id: root(1),
  owner: OWNER,
  parent: root(2),
  model_root: root(3),
  metadata_root: root(4),
  added_blocks: 2,
};
const OBJ = root(5);
const fraud: GrowthEvent = {
  type: "challenge",
  sender: "ref",
  kind: "fraud",
  stage: 0,
  block: null,
  phase: null,
  object_root: null,
  needed: [OBJ],
};
const avail: GrowthEvent = {
  type: "challenge",
  sender: "ref",
  kind: "availability",
  stage: 0,
  block: null,
  phase: null,
  object_root: OBJ,
  needed: [OBJ],
};
const tick: GrowthEvent = { type: "tick" };

/** Grown at 100: deadline 106, expires 220. */
function claimed(): GrowthState {
  const g = grow(INPUT, env(100));
  assert.ok(g.ok);
  return g.state;
}

function sealedFraud(): GrowthState {
  let s = cov.ok(claimed(), fraud, env(101));
  s = cov.ok(s, { type: "upload", sender: "ref", object_root: OBJ, index: 0, size: 3 }, env(102));
  return cov.ok(s, { type: "seal", sender: "ref", object_root: OBJ, digest: OBJ }, env(102));
}

Deno.test("grow locks claim_bond and opens a one-stage claim", () => {
  assert.deepEqual(claimed(), {
    status: "claimed",
    claim: {
      id: root(1),
      owner: OWNER,
      bond: 20_000_000,
      stages: 1,
      deadline: 106,
      expires: 220,
      challenge: null,
    },
    growth: { parent: root(2), model_root: root(3), metadata_root: root(4), added_blocks: 2 },
    moves: [{ op: "lock", account: OWNER, amount: 20_000_000 }],
  });
});

Deno.test("grow is rejected for 0 or 17 blocks, a malformed root, or a model equal to its parent", () => {
  for (
    const input of [
      { ...INPUT, added_blocks: 0 },
      { ...INPUT, added_blocks: 17 },
      { ...INPUT, parent: "x" },
      { ...INPUT, model_root: root(2) },
    ]
  ) {
    const r = grow(input, env(1));
    assert.equal(r.ok, false);
    if (!r.ok) assert.equal(r.code, "invalid_model");
  }
  assert.ok(grow({ ...INPUT, added_blocks: 16 }, env(1)).ok);
});

Deno.test("an unchallenged growth settles with its bond refunded and nothing minted", () => {
  const s = claimed();
  cov.rejects(s, tick, env(106), "invalid_transition");
  const done = cov.ok(s, tick, env(107));
  assert.equal(done.status, "settled");
  assert.deepEqual(done.moves, [{ op: "release", account: OWNER, amount: 20_000_000 }]);
  for (const e of [tick, fraud]) cov.rejects(done, e, env(300), "invalid_transition");
});

Deno.test("a growth challenge can only name stage 0", () => {
  cov.rejects(claimed(), { ...fraud, stage: 1 } as GrowthEvent, env(101), "invalid_challenge");
});

Deno.test("a forged growth is rejected with slash and conserves its escrow", () => {
  const s = sealedFraud();
  assert.equal(s.status, "resolving");
  const r = cov.ok(
    s,
    { type: "resolve", sender: "v", verdict: "mismatch", what: "forward output" },
    env(103),
  );
  assert.equal(r.status, "rejected");
  assert.deepEqual(r.moves, [
    { op: "release", account: "ref", amount: 2_000_000 },
    { op: "release", account: "ref", amount: 10_000_000 },
    { op: "burn", amount: 10_000_000 },
  ]);
  assert.equal(escrowAfter([claimed(), cov.ok(claimed(), fraud, env(101)), r].flatMap((x) => x.moves)), 0);
  cov.rejects(r, tick, env(300), "invalid_transition");
});

Deno.test("every claim-phase path of a growth follows its declared edges", () => {
  // Match reopens the window; a fraud timeout from each live state reopens it too.
  assert.equal(
    cov.ok(sealedFraud(), { type: "resolve", sender: "v", verdict: "match" }, env(103)).status,
    "claimed",
  );
  assert.equal(cov.ok(sealedFraud(), tick, env(122)).status, "claimed");
  const challenged = cov.ok(claimed(), fraud, env(101));
  assert.equal(cov.ok(challenged, tick, env(122)).status, "claimed");
  const uploading = cov.ok(
    challenged,
    { type: "upload", sender: "ref", object_root: OBJ, index: 0, size: 3 },
    env(102),
  );
  assert.equal(cov.ok(uploading, tick, env(122)).status, "claimed");
  // Availability: answered reopens; unanswered rejects from challenged or uploading.
  const a = cov.ok(claimed(), avail, env(101));
  const au = cov.ok(a, { type: "upload", sender: OWNER, object_root: OBJ, index: 0, size: 3 }, env(102));
  assert.equal(
    cov.ok(au, { type: "seal", sender: OWNER, object_root: OBJ, digest: OBJ }, env(102)).status,
    "claimed",
  );
  assert.equal(cov.ok(a, tick, env(122)).status, "rejected");
  assert.equal(cov.ok(au, tick, env(122)).status, "rejected");
  // Absolute expiry from every live state.
  for (const s of [challenged, uploading, sealedFraud()]) {
    assert.equal(cov.ok(s, tick, env(221)).status, "expired");
  }
  const reopened = cov.ok(challenged, tick, env(216)); // window reopened to 222, past the lifetime 220
  assert.equal(cov.ok(reopened, tick, env(221)).status, "expired");
  // The sealed multi-object path: a partial seal stays uploading.
  const two = [root(6), root(7)];
  let m = cov.ok(claimed(), { ...fraud, needed: two } as GrowthEvent, env(101));
  m = cov.ok(m, { type: "upload", sender: "ref", object_root: two[0]!, index: 0, size: 1 }, env(101));
  assert.equal(
    cov.ok(m, { type: "seal", sender: "ref", object_root: two[0]!, digest: two[0]! }, env(101)).status,
    "uploading",
  );
  m = cov.ok(m, { type: "upload", sender: "ref", object_root: two[1]!, index: 0, size: 1 }, env(101));
  assert.equal(m.status, "uploading");
});

Deno.test("every declared growth edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});
