/**
 * Seeded random walks through every machine that moves money: each accepted step must follow a declared edge
 * (apply throws otherwise), the instance's escrow never goes negative, and every terminal state leaves it at
 * exactly zero. Minting happens only when a training step settles, and then equals `reward`.
 */
import assert from "node:assert/strict";
import type { Machine, MachineEvent, MachineState } from "../../workflows/machine.ts";
import { escrowAfter, type Move } from "../../workflows/money.ts";
import type { WorkflowParams } from "../../workflows/params.ts";
import { reserve, training } from "../../workflows/training.ts";
import { grow, growth } from "../../workflows/growth.ts";
import { inference, requestInference } from "../../workflows/inference.ts";
import { cohort, proposeData } from "../../workflows/cohort.ts";
import { UPLOAD_CHUNK_BYTES } from "../../core/limits.ts";
import { env, root } from "./_helpers.ts";

type Rng = () => number;
function rng(seed: number): Rng {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

const OBJS = [root(0x101), root(0x102)];
const OWNER = "owner";

/** Random claim-phase events, biased toward ones that can be accepted. */
function claimEvent(r: Rng, owner: string, state: MachineState): MachineEvent {
  const s = state as {
    claim?: {
      challenge: { owner: string; kind: string; uploads: { object_root: string; chunks: number }[] } | null;
    };
  };
  const c = s.claim?.challenge ?? null;
  const publisher = c === null ? "ref" : c.kind === "availability" ? owner : c.owner;
  const obj = pick(r, OBJS);
  const chunks = c?.uploads.find((u) => u.object_root === obj)?.chunks ?? 0;
  switch (Math.floor(r() * 6)) {
    case 0:
      return r() < 0.5
        ? {
          type: "challenge",
          sender: "ref",
          kind: "fraud",
          stage: 0,
          block: null,
          phase: null,
          object_root: null,
          needed: OBJS,
        } as MachineEvent
        : {
          type: "challenge",
          sender: "ref",
          kind: "availability",
          stage: 0,
          block: null,
          phase: null,
          object_root: obj,
          needed: [obj],
        } as MachineEvent;
    case 1:
    case 2:
      return {
        type: "upload",
        sender: r() < 0.9 ? publisher : "eve",
        object_root: obj,
        index: r() < 0.9 ? chunks : chunks + 1,
        size: r() < 0.5 ? UPLOAD_CHUNK_BYTES : 1 + Math.floor(r() * 100),
      } as MachineEvent;
    case 3:
      return {
        type: "seal",
        sender: publisher,
        object_root: obj,
        digest: r() < 0.9 ? obj : root(0x999),
      } as MachineEvent;
    case 4:
      return (r() < 0.5 ? { type: "resolve", sender: "v", verdict: "match" } : {
        type: "resolve",
        sender: "v",
        verdict: "mismatch",
        what: "input gradient",
      }) as unknown as MachineEvent;
    default:
      return { type: "tick" };
  }
}

interface Walk {
  name: string;
  // deno-lint-ignore no-explicit-any
  machine: Machine<any, any, WorkflowParams>;
  start(h: number): MachineState & { moves: Move[] };
  event(r: Rng, state: MachineState): MachineEvent;
  terminal: readonly string[];
  mints: (state: MachineState) => number;
}

const WALKS: Walk[] = [
  {
    name: "training",
    machine: training,
    start: (h) => {
      const s = reserve({
        id: root("a"),
        owner: OWNER,
        workers: ["w1", "w2", "w3"],
        data_root: root("d"),
        sequence_index: 0,
        batch: root("b"),
      }, env(h));
      if (!s.ok) throw new Error(s.message);
      return s.state;
    },
    event: (r, state) =>
      state.status === "reserved" && r() < 0.5
        ? {
          type: "claim",
          sender: OWNER,
          claim_id: root("c"),
          workers: ["w1", "w2", "w3"],
          data_root: root("d"),
          sequence_index: 0,
          record_root: root(1),
          model_root: root(2),
          work_identity: root(3),
          metadata_root: root(4),
        } as MachineEvent
        : claimEvent(r, OWNER, state),
    terminal: ["settled", "rejected", "expired"],
    mints: (s) => (s.status === "settled" ? 1_000_000 : 0),
  },
  {
    name: "growth",
    machine: growth,
    start: (h) => {
      const s = grow({
        id: root("a"),
        owner: OWNER,
        parent: root(1),
        model_root: root(2),
        metadata_root: root(3),
        added_blocks: 1,
      }, env(h));
      if (!s.ok) throw new Error(s.message);
      return s.state;
    },
    event: (r, state) => claimEvent(r, OWNER, state),
    terminal: ["settled", "rejected", "expired"],
    mints: () => 0,
  },
  {
    name: "inference",
    machine: inference,
    start: (h) => {
      const s = requestInference({
        id: root("a"),
        requester: "user",
        model_root: root(1),
        provider: OWNER,
        prompt_ids: [1, 2],
        max_tokens: 8,
        max_price: 5_000,
        expires_in: 120,
      }, env(h));
      if (!s.ok) throw new Error(s.message);
      return s.state;
    },
    event: (r, state) =>
      (state.status === "requested" || state.status === "reopened") && r() < 0.5
        ? {
          type: "respond",
          sender: OWNER,
          claim_id: root("c"),
          stages: 1,
          record_root: root(1),
          metadata_root: root(2),
          tokens: 1 + Math.floor(r() * 8),
        } as MachineEvent
        : claimEvent(r, OWNER, state),
    terminal: ["settled", "expired"],
    mints: () => 0,
  },
  {
    name: "cohort",
    machine: cohort,
    start: (h) => {
      const s = proposeData({
        id: root("a"),
        proposer: OWNER,
        data_root: root("d"),
        previous: root("c"),
        electorate: [["a", 2], ["b", 1], ["c", 1]],
        train_batches: [root(1), root(2), root(3), root(4)],
        replay_pool: null,
      }, env(h));
      if (!s.ok) throw new Error(s.message);
      return s.state;
    },
    event: (r) =>
      r() < 0.5
        ? { type: "vote", sender: pick(r, ["a", "b", "c", "d"]), approve: r() < 0.7 } as MachineEvent
        : { type: "tick", current: [["a", 2], ["b", 1], ["c", 1]], busy: r() < 0.3 } as MachineEvent,
    terminal: ["activated", "expired"],
    mints: () => 0,
  },
];

for (const walk of WALKS) {
  Deno.test(`${walk.name}: 400 seeded random walks follow declared edges and conserve the escrow`, () => {
    const reached = new Set<string>();
    for (let seed = 1; seed <= 400; seed++) {
      const r = rng(seed * 7919);
      let h = 100;
      let state = walk.start(h);
      const moves: Move[] = [...state.moves];
      for (let i = 0; i < 120 && !walk.terminal.includes(state.status); i++) {
        h += Math.floor(r() * 4);
        const event = walk.event(r, state);
        const step = walk.machine.apply(state, event, env(h));
        if (!step.ok) continue;
        state = step.state;
        moves.push(...state.moves);
        const escrow = escrowAfter(moves);
        assert.ok(escrow >= 0, `seed ${seed} step ${i}: escrow is ${escrow}`);
      }
      // Finish with ticks far in the future: every instance ends, except a cohort may still be waiting to activate.
      for (let k = 0; k < 4 && !walk.terminal.includes(state.status); k++) {
        h += 1_000;
        const e = walk.name === "cohort"
          ? { type: "tick", current: [["a", 2]], busy: false }
          : { type: "tick" };
        const step = walk.machine.apply(state, e as MachineEvent, env(h));
        if (step.ok) {
          state = step.state;
          moves.push(...state.moves);
        }
      }
      assert.ok(walk.terminal.includes(state.status), `seed ${seed}: ended in ${state.status}`);
      reached.add(state.status);
      assert.equal(escrowAfter(moves), 0, `seed ${seed}: escrow left in ${state.status}`);
      const minted = moves.reduce(
        (n, m) => n + (m.op === "mint" || m.op === "mint_verifiers" ? m.amount : 0),
        0,
      );
      assert.equal(minted, walk.mints(state), `seed ${seed}: minted ${minted} in ${state.status}`);
    }
    assert.deepEqual(
      [...reached].sort(),
      [...walk.terminal].sort(),
      `${walk.name} walks reached ${[...reached]}`,
    );
  });
}
