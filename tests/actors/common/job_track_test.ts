import assert from "node:assert/strict";
import { canonical } from "../../../core/canonical.ts";
import { ProtocolError } from "../../../core/errors.ts";
import type { ChainClient } from "../../../actors/common/chain.ts";
import { EventLog } from "../../../actors/runtime/event_log.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { genesisCandidates } from "../../../actors/common/chain_setup.ts";
import { JobTrack } from "../../../actors/common/job_track.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { reserve, training, type TrainingState } from "../../../workflows/training.ts";

const OWNER = "02" + "a".repeat(64);
const ASSIGNMENT = "1".repeat(64);

/** A chain whose blocks from 1 to `top` carry no transaction, at block time 1000·h. */
function emptyChain(top: number): { chain: ChainClient; fetched: number[] } {
  const fetched: number[] = [];
  const chain = {
    block(h: number) {
      if (h > top) throw new ProtocolError("not_found", `Cannot look up block: height ${h} is not committed`);
      fetched.push(h);
      return Promise.resolve({ height: h, block: { time: 1000 * h, txs: [] }, results: [] });
    },
  } as unknown as ChainClient;
  return { chain, fetched };
}

function setup() {
  const dir = Deno.makeTempDirSync({ prefix: "job-track-" });
  const journal = Journal.open(`${dir}/journal.sqlite`);
  const r = reserve({
    id: ASSIGNMENT,
    owner: OWNER,
    workers: ["02" + "b".repeat(64)],
    data_root: "d".repeat(64),
    sequence_index: 0,
    batch: "e".repeat(64),
  }, { height: 10, time: 10_000, params: DEVNET_PARAMS });
  assert.ok(r.ok);
  const cs = {
    genesisPath: "",
    params: DEVNET_PARAMS,
    batches: [],
    data: false,
    data_root: "d".repeat(64),
    learning_rate: "0x1p-4",
    clip: "0x1p+0",
  };
  return { dir, journal, initial: r.state as TrainingState, cs };
}

Deno.test("an unclaimed assignment is journaled as the one tick that expires it, at the block after its lease, with that block's env", async () => {
  const { dir, journal, initial, cs } = setup();
  try {
    const expiresAt = 10 + DEVNET_PARAMS.lease_blocks + 1;
    const { chain, fetched } = emptyChain(expiresAt + 5);
    const log = new EventLog(journal);
    const t = JobTrack.open({ chain, log, setup: cs }, ASSIGNMENT, initial, { height: 10, index: 1 });
    assert.equal((await t.catchUp(expiresAt - 1)).status, "reserved");
    assert.equal(log.events(ASSIGNMENT).length, 0);
    const s = await t.catchUp(expiresAt + 5);
    assert.equal(s.status, "expired");
    assert.ok(t.ended());
    assert.deepEqual(fetched, Array.from({ length: expiresAt - 9 }, (_, i) => 10 + i)); // stops once ended
    const events = log.events(ASSIGNMENT);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.event, canonical({ type: "tick" }));
    assert.equal(
      events[0]!.env,
      canonical({ height: expiresAt, params: DEVNET_PARAMS, time: 1000 * expiresAt }),
    );
    const expected = training.apply(initial, { type: "tick" }, {
      height: expiresAt,
      time: 0,
      params: DEVNET_PARAMS,
    });
    assert.ok(expected.ok);
    assert.equal(events[0]!.state, canonical(expected.state as never));
  } finally {
    journal.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a restarted track re-derives the recorded events without appending them again; a recorded event the chain does not confirm is journal_divergence", async () => {
  const { dir, journal, initial, cs } = setup();
  try {
    const expiresAt = 10 + DEVNET_PARAMS.lease_blocks + 1;
    const log = new EventLog(journal);
    const first = JobTrack.open({ chain: emptyChain(expiresAt).chain, log, setup: cs }, ASSIGNMENT, initial, {
      height: 10,
      index: 1,
    });
    await first.catchUp(expiresAt);
    const again = JobTrack.open({ chain: emptyChain(expiresAt).chain, log, setup: cs }, ASSIGNMENT, initial, {
      height: 10,
      index: 1,
    });
    assert.equal((await again.catchUp(expiresAt)).status, "expired");
    assert.equal(log.events(ASSIGNMENT).length, 1);
    // The recorded tick's block time no longer matches what the chain serves: the track refuses to go on.
    journal.db.prepare("UPDATE events SET env = ? WHERE instance = ?").run(
      canonical({ height: expiresAt, params: DEVNET_PARAMS as never, time: 1 }),
      ASSIGNMENT,
    );
    const diverged = JobTrack.open(
      { chain: emptyChain(expiresAt).chain, log, setup: cs },
      ASSIGNMENT,
      initial,
      {
        height: 10,
        index: 1,
      },
    );
    await assert.rejects(
      () => diverged.catchUp(expiresAt),
      (e: unknown) => e instanceof ProtocolError && e.code === "journal_divergence",
    );
    assert.equal(log.events(ASSIGNMENT).length, 1);
  } finally {
    journal.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("the genesis is looked for beside the home (devnet layout) and under net/ (test layout)", () => {
  assert.deepEqual(genesisCandidates("/x/devnet/sponsor/"), [
    "/x/devnet/genesis.json",
    "/x/devnet/net/genesis.json",
  ]);
  assert.deepEqual(genesisCandidates("sponsor"), ["./genesis.json", "./net/genesis.json"]);
});
