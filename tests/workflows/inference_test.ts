import assert from "node:assert/strict";
import {
  inference,
  type InferenceEvent,
  type InferenceState,
  type InferInput,
  requestInference,
} from "../../workflows/inference.ts";
import { escrowAfter } from "../../workflows/money.ts";
import { Coverage, env, root } from "./_helpers.ts";

const cov = new Coverage(inference);
const INPUT: InferInput = {
  id: root("a"),
  requester: "user",
  model_root: root("b"),
  provider: "prov",
  prompt_ids: [5, 6, 7],
  max_tokens: 4,
  max_price: 1_000,
  expires_in: 50,
};
const OBJ = root(0x55);

/** Requested at 100: expires 150, responses close at 144. */
function requested(): InferenceState {
  const r = requestInference(INPUT, env(100));
  assert.ok(r.ok);
  return r.state;
}

function respondEv(over: Partial<Extract<InferenceEvent, { type: "respond" }>> = {}): InferenceEvent {
  return {
    type: "respond",
    sender: "prov",
    claim_id: root("c"),
    stages: 2,
    record_root: root("e"),
    metadata_root: root("f"),
    tokens: 3,
    ...over,
  };
}

/** Responded at 110: window closes at 116, challenge deadlines are +20. */
function responded(): InferenceState {
  return cov.ok(requested(), respondEv(), env(110));
}

const fraud: InferenceEvent = {
  type: "challenge",
  sender: "ref",
  kind: "fraud",
  stage: 1,
  block: null,
  phase: null,
  object_root: null,
  needed: [OBJ],
};
const tick: InferenceEvent = { type: "tick" };

function sealed(): InferenceState {
  let s = cov.ok(responded(), fraud, env(111));
  s = cov.ok(s, { type: "upload", sender: "ref", object_root: OBJ, index: 0, size: 9 }, env(112));
  return cov.ok(s, { type: "seal", sender: "ref", object_root: OBJ, digest: OBJ }, env(112));
}

Deno.test("infer escrows max_price and fixes the price per token and expiry", () => {
  assert.deepEqual(requested(), {
    status: "requested",
    job: {
      id: root("a"),
      requester: "user",
      model_root: root("b"),
      provider: "prov",
      prompt_ids: [5, 6, 7],
      max_tokens: 4,
      max_price: 1_000,
      price_per_token: 100,
      expires: 150,
    },
    moves: [{ op: "lock", account: "user", amount: 1_000 }],
  });
});

Deno.test("infer is rejected for a prompt outside 2-192 ids, 0 or 9 tokens, a low price, or an expiry out of bounds", () => {
  const cases: Partial<InferInput>[] = [
    { prompt_ids: [1] },
    { prompt_ids: Array(193).fill(1) },
    { prompt_ids: [1, -1] },
    { max_tokens: 0 },
    { max_tokens: 9 },
    { max_price: 399 },
    { expires_in: 9 },
    { expires_in: 201 },
    { model_root: "m" },
  ];
  for (const c of cases) {
    const r = requestInference({ ...INPUT, ...c }, env(1));
    assert.equal(r.ok ? "ok" : r.code, "invalid_inference", JSON.stringify(c));
  }
  assert.ok(requestInference({ ...INPUT, max_price: 400, prompt_ids: Array(192).fill(1) }, env(1)).ok);
});

Deno.test("an unanswered job expires after expires and refunds the escrow", () => {
  const s = requested();
  cov.rejects(s, tick, env(150), "invalid_transition");
  const e = cov.ok(s, tick, env(151));
  assert.equal(e.status, "expired");
  assert.deepEqual(e.moves, [{ op: "release", account: "user", amount: 1_000 }]);
  cov.rejects(e, respondEv(), env(152), "invalid_transition");
});

Deno.test("respond is accepted only from the provider, strictly before expires − challenge_blocks, with 1..max_tokens", () => {
  const s = requested();
  cov.rejects(s, respondEv({ sender: "eve" }), env(110), "not_owner");
  cov.rejects(s, respondEv(), env(144), "expired");
  cov.rejects(s, respondEv({ tokens: 0 }), env(110), "invalid_inference");
  cov.rejects(s, respondEv({ tokens: 5 }), env(110), "invalid_inference");
  cov.rejects(s, respondEv({ record_root: "r" }), env(110), "invalid_inference");
  cov.rejects(s, respondEv({ stages: 0 }), env(110), "invalid_inference");
  cov.rejects(s, fraud, env(110), "invalid_transition");
  const r = cov.ok(s, respondEv(), env(143));
  assert.equal(r.status, "responded");
  if (r.status !== "responded") return;
  assert.deepEqual(r.claim, {
    id: root("c"),
    owner: "prov",
    bond: 20_000_000,
    stages: 2,
    deadline: 149,
    expires: 150,
    challenge: null,
  });
  assert.deepEqual(r.moves, [{ op: "lock", account: "prov", amount: 20_000_000 }]);
});

Deno.test("an accepted response pays tokens · price, refunds the rest and the provider's bond", () => {
  const s = responded();
  cov.rejects(s, respondEv(), env(111), "busy");
  cov.rejects(s, tick, env(116), "invalid_transition");
  const done = cov.ok(s, tick, env(117));
  assert.equal(done.status, "settled");
  assert.deepEqual(done.moves, [
    { op: "release", account: "prov", amount: 20_000_000 },
    { op: "release", account: "prov", amount: 300 },
    { op: "release", account: "user", amount: 700 },
  ]);
  assert.equal(escrowAfter([requested(), s, done].flatMap((x) => x.moves)), 0);
  cov.rejects(done, tick, env(200), "invalid_transition");
});

Deno.test("challenges run while the job stays responded; a match burns the challenger's bond", () => {
  const c = cov.ok(responded(), fraud, env(111));
  assert.equal(c.status, "responded");
  assert.deepEqual(c.moves, [{ op: "lock", account: "ref", amount: 2_000_000 }]);
  const m = cov.ok(sealed(), { type: "resolve", sender: "v", verdict: "match" }, env(113));
  assert.equal(m.status, "responded");
  assert.deepEqual(m.moves, [{ op: "burn", amount: 2_000_000 }]);
  // A fraud challenge left unresolved past its deadline also leaves the job responded.
  assert.equal(cov.ok(c, tick, env(132)).status, "responded");
});

Deno.test("a refuted response slashes the provider, then the job reopens for a new response", () => {
  const r = cov.ok(
    sealed(),
    { type: "resolve", sender: "v", verdict: "mismatch", what: "forward output" },
    env(113),
  );
  assert.equal(r.status, "refuted");
  assert.deepEqual(r.moves, [
    { op: "release", account: "ref", amount: 2_000_000 },
    { op: "release", account: "ref", amount: 10_000_000 },
    { op: "burn", amount: 10_000_000 },
  ]);
  cov.rejects(r, respondEv(), env(114), "invalid_transition");
  const o = cov.ok(r, tick, env(114));
  assert.equal(o.status, "reopened");
  assert.deepEqual(o.moves, []);
  cov.rejects(o, tick, env(150), "invalid_transition");
  cov.rejects(o, fraud, env(115), "invalid_transition");
  assert.equal(cov.ok(o, respondEv({ claim_id: root("d") }), env(115)).status, "responded");
  const e = cov.ok(o, tick, env(151));
  assert.deepEqual([e.status, e.moves], ["expired", [{ op: "release", account: "user", amount: 1_000 }]]);
  assert.equal(cov.ok(r, tick, env(151)).status, "expired");
});

Deno.test("an unanswered availability challenge refutes the response", () => {
  const a = cov.ok(
    responded(),
    {
      type: "challenge",
      sender: "ref",
      kind: "availability",
      stage: 0,
      block: null,
      phase: null,
      object_root: OBJ,
      needed: [OBJ],
    },
    env(111),
  );
  assert.equal(cov.ok(a, tick, env(132)).status, "refuted");
});

Deno.test("a response still challenged at the job's expiry closes: bonds settled and the escrow refunded", () => {
  const c = cov.ok(cov.ok(responded(), fraud, env(111)), tick, env(132)); // window reopened to 138
  const c2 = cov.ok(c, fraud, env(133)); // challenge deadline 153, past the job's expiry
  const e = cov.ok(c2, tick, env(151));
  assert.equal(e.status, "expired");
  assert.deepEqual(e.moves, [
    { op: "release", account: "prov", amount: 20_000_000 },
    { op: "burn", amount: 2_000_000 },
    { op: "release", account: "user", amount: 1_000 },
  ]);
});

Deno.test("every declared inference edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});
