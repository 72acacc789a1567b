import assert from "node:assert/strict";
import { ChainClient } from "../../../actors/common/chain.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../../workflows/params.ts";
import { runSponsor, startNetwork } from "../sponsor/_network.ts";
import { startTask } from "../worker/_process.ts";
import { canonical } from "../../../core/canonical.ts";
import { claimRecord } from "../../../actors/referee/check.ts";
import { chunkRoot } from "../../../core/chunk_tree.ts";
import type { JsonObject } from "../../../core/canonical.ts";
import { componentParameters } from "../../../kernels/model.ts";
import { TINY } from "../worker/_fixture.ts";
import { alteredCopy, journalEvents, replayJournalProcess } from "../sponsor/_journal.ts";

/**
 * The challenge window of the forged cases: 200 blocks (30 s at 150 ms). The referee must start, replay and
 * challenge within it while the whole default suite runs on two cores (80 blocks were once too few there). A
 * caught claim ends at its resolve, so a wide window costs nothing when the referee is in time.
 */
const FORGED_WINDOW = 200;

/** Capacities that place the tiny model's embed, norm and block 0 on stage 0 and blocks 1-3 on stage 1. */
function threeBlockStage(): number[] {
  const block = componentParameters(TINY, "block_000");
  return [componentParameters(TINY, "embed") + componentParameters(TINY, "norm") + block, 3 * block];
}

function refereeArgs(net: { refereeHome: string; rpc: string; workersFile: string }, extra: string[] = []) {
  return [
    "--home",
    net.refereeHome,
    "--rpc",
    net.rpc,
    "--workers",
    net.workersFile,
    "--poll-ms",
    "100",
    ...extra,
  ];
}

for (
  const [forge, what] of [
    ["optimizer", "optimizer update"],
    ["forward", "forward output"],
    ["backward", "input gradient"],
  ] as const
) {
  Deno.test(`the referee catches a worker forging its ${forge}: fraud challenge, chunked upload, seal, resolve, claim rejected with the slash`, async () => {
    // The referee must start, replay both stages and challenge within the window while the whole default
    // suite runs in parallel on two cores (FORGED_WINDOW).
    // The forward forger holds 3 blocks (stage 0: embed, norm and block 0) and forges block 2 of 3 (index 1):
    // the referee names that block, so only its parent component and its input activation are uploaded.
    const caps = forge === "forward" ? threeBlockStage() : undefined;
    const net = await startNetwork({
      workers: 2,
      forge: [null, forge],
      challengeBlocks: FORGED_WINDOW,
      ...(caps ? { capacities: caps } : {}),
    });
    const referee = await startTask("referee", refereeArgs(net), { listens: false });
    try {
      const chain = new ChainClient(net.rpc);
      const run = await runSponsor(net, ["--steps", "1", "--budget", "1"]);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(run.stderr, /budget_exhausted/);
      const claimLine = await referee.waitFor(/^claim [0-9a-f]{64} /);
      const claimId = claimLine.split(" ")[1]!;
      await referee.waitFor(new RegExp(`^verdict ${claimId} stage 1 mismatch ${what}$`));
      await referee.waitFor(new RegExp(`^verdict ${claimId} stage 0 match$`));
      await referee.waitFor(new RegExp(`^outcome ${claimId} caught: rejected`), 120_000);
      const c = await chain.claim(claimId);
      const state = c!.state as { status: string; reason: string };
      assert.equal(state.status, "rejected");
      assert.match(state.reason, new RegExp(what));
      assert.match(run.stdout, new RegExp(`^step 0 rejected: .*${what}`, "m"));
      // The slash: the challenger gets its bond back plus half the claim bond; nothing is minted.
      const fee = DEVNET_PARAMS.fee;
      const ref = await chain.account(net.accounts.referee);
      assert.equal(ref.balance, 50 * ATOMS_PER_NEURO + DEVNET_PARAMS.claim_bond / 2 - ref.nonce * fee);
      const sp = await chain.account(net.accounts.sponsor);
      assert.equal(sp.balance, 200 * ATOMS_PER_NEURO - DEVNET_PARAMS.claim_bond - sp.nonce * fee);
      for (const w of net.accounts.workers) assert.equal((await chain.account(w)).balance, 0);
      assert.equal((await chain.lifecycle()).training_round, 0);
      // The referee says how far behind it is: nothing left to check.
      await referee.waitFor(/^status .* claims=1 stages_checked=2 behind_stages=0 challenges=1$/);
      // The referee journaled the dispute as events of the ledger's training machine, ending in the
      // ledger's state; `deno task replay` re-runs it, and a copy with one upload's size altered fails there.
      const journal = `${net.refereeHome}/journal.sqlite`;
      const events = journalEvents(journal, claimId).map((e) => ({ ...e, event: JSON.parse(e.event) }));
      const needed = events[1]!.event.needed as string[];
      if (forge === "forward") {
        const ch = events[1]!.event as { stage: number; block: number; phase: string };
        assert.deepEqual([ch.stage, ch.block, ch.phase], [1, 1, "forward"]);
        const genesis = await chain.manifest((await chain.lifecycle()).learning_root as string);
        const { traces } = await claimRecord(chain, claimId);
        assert.deepEqual(needed, [genesis.components.block_002!, traces[1]!.blocks[0]!.output].sort());
        assert.equal(state.reason, "mismatch: forward output");
      }
      assert.deepEqual(events.map((e) => e.event.type), [
        "claim",
        "challenge",
        ...needed.flatMap(() => ["upload", "seal"]),
        "resolve",
      ]);
      assert.equal(events.at(-1)!.state, canonical(c!.state));
      const replayed = await replayJournalProcess(journal);
      assert.equal(replayed.code, 0, replayed.stderr);
      assert.deepEqual(
        (replayed.report.instances as { instance: string; events: number }[]).map((
          i,
        ) => [i.instance, i.events]),
        [[claimId, events.length]],
      );
      const bad = alteredCopy(journal, claimId, 2, (e) => ({ ...e, size: (e.size as number) + 1 }));
      try {
        const failed = await replayJournalProcess(bad);
        assert.equal(failed.code, 1);
        const d = failed.report.divergence as { instance: string; index: number };
        assert.deepEqual([d.instance, d.index], [claimId, 2]);
      } finally {
        Deno.removeSync(bad);
      }
    } finally {
      await referee.stop();
      await net.close();
    }
  });
}

Deno.test("the referee checks every stage of every honest claim, challenges nothing, and resumes from its journal", async () => {
  const net = await startNetwork({ workers: 2 });
  try {
    const run = await runSponsor(net, ["--steps", "2"]);
    assert.equal(run.code, 0, run.stderr);
    const first = await startTask("referee", refereeArgs(net, ["--once"]), { listens: false });
    await first.status;
    const status = first.lines.find((l) => l.startsWith("status "))!;
    assert.match(status, /behind_blocks=0 claims=2 stages_checked=4 behind_stages=0 challenges=0$/);
    assert.equal(first.lines.filter((l) => /^verdict .* match$/.test(l)).length, 4);
    assert.equal(
      first.lines.filter((l) => /^outcome .* clean: every stage matches; the claim is settled$/.test(l))
        .length,
      2,
    );
    // A second pass re-checks nothing: every verdict is in the journal.
    const second = await startTask("referee", refereeArgs(net, ["--once"]), { listens: false });
    await second.status;
    assert.equal(second.lines.filter((l) => l.startsWith("verdict ")).length, 0);
    assert.match(
      second.lines.find((l) => l.startsWith("status "))!,
      /claims=2 stages_checked=4 behind_stages=0/,
    );
  } finally {
    await net.close();
  }
});

Deno.test("objects the referee cannot fetch get availability challenges; the sponsor answers each from its workers, and the claim settles", async () => {
  // Four challenges in a row, each within its reopened window: slower blocks and a 40-block window (10 s)
  // leave room on a loaded machine.
  const net = await startNetwork({ workers: 2, intervalMs: 250, challengeBlocks: 40 });
  // The referee knows no live worker, only the genesis model (as every devnet home does).
  const { storeModel } = await import("../../../kernels/manifest.ts");
  const { ObjectStore } = await import("../../../core/object_store.ts");
  await storeModel(new ObjectStore(`${net.refereeHome}/objects`), net.fixture.model, {
    origin: { kind: "init", seed: 3 },
    tokenizer_root: "0".repeat(64),
  });
  const blind = `${net.dir}/blind-workers.json`;
  await Deno.writeTextFile(blind, JSON.stringify([{ url: "http://127.0.0.1:9", token: "00".repeat(32) }]));
  const referee = await startTask(
    "referee",
    ["--home", net.refereeHome, "--rpc", net.rpc, "--workers", blind, "--poll-ms", "100"],
    { listens: false },
  );
  try {
    const chain = new ChainClient(net.rpc);
    const run = await runSponsor(net, ["--steps", "1"]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^step 0 answering availability challenge/m);
    assert.match(run.stdout, /^step 0 settled /m);
    const claimId = (await referee.waitFor(/^claim [0-9a-f]{64} /)).split(" ")[1]!;
    await referee.waitFor(
      new RegExp(`^outcome ${claimId} clean: every stage matches; the claim is settled$`),
    );
    const challenges = referee.lines.filter((l) => /^challenge .* availability/.test(l)).length;
    // Each stage has two objects beyond the genesis model (its input and its incoming gradient): four
    // challenges, one at a time, each answered before the next.
    assert.equal(challenges, 4, referee.lines.join("\n"));
    // Every answered availability challenge refunded the referee's bond: it paid fees only.
    const ref = await chain.account(net.accounts.referee);
    assert.equal(ref.balance, 50 * ATOMS_PER_NEURO - ref.nonce * DEVNET_PARAMS.fee);
    assert.equal(ref.nonce, challenges);
    for (const w of net.accounts.workers) assert.equal((await chain.account(w)).balance, 400_000);
    // Both actors journaled the job through the training machine and agree event for event: the claim,
    // each challenge and its answer (upload, seal), the settlement tick, ending in the ledger's state.
    const answer = (await chain.claim(claimId))!;
    const jobId = (answer.state as { assignment: { id: string } }).assignment.id;
    const byReferee = journalEvents(`${net.refereeHome}/journal.sqlite`, claimId);
    const bySponsor = journalEvents(`${net.sponsorHome}/journal.sqlite`, jobId);
    assert.deepEqual(bySponsor, byReferee);
    const types = byReferee.map((e) => JSON.parse(e.event).type);
    assert.equal(types.filter((t) => t === "challenge").length, 4);
    assert.deepEqual([types[0], types.at(-1)], ["claim", "tick"]);
    assert.equal(byReferee.at(-1)!.state, canonical(answer.state));
  } finally {
    await referee.stop();
    await net.close();
  }
});

Deno.test("a forged update of stage 0's embedding (over 1 MiB) is refuted through the head with the embedding uploaded in two chunks", async () => {
  const { WIDE_VOCAB } = await import("../worker/_fixture.ts");
  const net = await startNetwork({
    workers: 2,
    forge: ["optimizer", null],
    config: WIDE_VOCAB,
    challengeBlocks: FORGED_WINDOW,
    // 2 MiB of uploads at 150 ms blocks: a loaded 2-core machine may take far more than the devnet's 20 blocks.
    availabilityBlocks: 200,
  });
  const referee = await startTask("referee", refereeArgs(net), { listens: false });
  try {
    const embed = net.fixture.manifest.components.embed!;
    const run = await runSponsor(net, ["--steps", "1", "--budget", "1"]);
    assert.equal(run.code, 1, run.stdout + run.stderr + referee.lines.join("\n"));
    assert.match(run.stdout, /^step 0 rejected: mismatch: optimizer update/m, referee.lines.join("\n"));
    const claimId = (await referee.waitFor(/^claim [0-9a-f]{64} /)).split(" ")[1]!;
    await referee.waitFor(new RegExp(`^verdict ${claimId} stage 0 mismatch optimizer update$`));
    // The referee names the head (embed and norm), whose update needs the embedding itself.
    await referee.waitFor(
      new RegExp(`^challenge ${claimId} stage 0 fraud \\(optimizer update, block head update\\)$`),
    );
    await referee.waitFor(new RegExp(`^outcome ${claimId} caught: rejected`), 120_000);
    const uploads = referee.lines.filter((l) => l.includes(`upload ${embed.slice(0, 12)} `));
    assert.deepEqual(uploads.map((l) => l.split(" ").at(-1)), ["1/2", "2/2"]);
    const size =
      (await Deno.stat(`${net.workerHomes[0]}/objects/${embed.slice(0, 2)}/${embed.slice(2)}`)).size;
    assert.ok(size > 1024 * 1024 && size < 2 * 1024 * 1024, `embedding is ${size} bytes`);
    const chain = new ChainClient(net.rpc);
    assert.equal((await chain.object(embed))!.length, size);
  } finally {
    await referee.stop();
    await net.close();
  }
});

async function submitGrow(net: Awaited<ReturnType<typeof startNetwork>>, forged: boolean): Promise<string> {
  const { growManifest } = await import("../../../kernels/growth.ts");
  const { buildManifest } = await import("../../../kernels/manifest.ts");
  const { configFromJson } = await import("../../../kernels/config.ts");
  const { growMetadata } = await import("../../../ledger/training/wire.ts");
  const { loadKeyFile } = await import("../../../ledger/keys.ts");
  const { txid } = await import("../../../ledger/envelope.ts");
  const { envelopeOf } = await import("../../../actors/common/chain.ts");
  const f = net.fixture;
  const last = f.manifest.components.block_002!;
  const lastBytes = await Deno.readFile(`${net.workerHomes[0]}/objects/${last.slice(0, 2)}/${last.slice(2)}`);
  const honest = growManifest(f.manifest, f.root, lastBytes, 1);
  // The forger appends a plain copy of the last block instead of the identity block: same shape, other output.
  const manifest = forged
    ? buildManifest({ ...configFromJson(f.manifest.config), num_hidden_layers: 4 }, {
      ...f.manifest.components,
      block_003: last,
    }, {
      parent: f.root,
      origin: f.manifest.origin,
      tokenizer_root: f.manifest.tokenizer_root,
      growth: { added: 1, from_layers: 3 },
    })
    : honest.manifest;
  const chain = new ChainClient(net.rpc);
  const key = await loadKeyFile(`${net.sponsorHome}/account.key`);
  const { id } = await import("../../../core/digest.ts");
  const bytes = await chain.sign(key, "grow", {
    parent: f.root,
    model_root: id(manifest as never),
    metadata: growMetadata(manifest),
    capacities: [1_000_000],
  });
  const answer = await chain.http.json("POST", "/broadcast_tx", bytes) as { check: { ok: boolean } };
  assert.equal(answer.check.ok, true, JSON.stringify(answer));
  return txid(envelopeOf(bytes) as never);
}

for (const forged of [false, true]) {
  Deno.test(`the referee replays ${forged ? "a forged" : "an honest"} growth from the parent's last block alone and ${forged ? "gets it rejected" : "lets it settle"}`, async () => {
    // A forged growth must be challenged, uploaded and resolved within the window (FORGED_WINDOW).
    const net = await startNetwork({ workers: 2, challengeBlocks: forged ? FORGED_WINDOW : 12 });
    const referee = await startTask("referee", refereeArgs(net), { listens: false });
    try {
      const claimId = await submitGrow(net, forged);
      await referee.waitFor(new RegExp(`^claim ${claimId} growth at height \\d+$`));
      if (forged) {
        await referee.waitFor(new RegExp(`^verdict ${claimId} stage 0 mismatch growth$`));
        await referee.waitFor(new RegExp(`^outcome ${claimId} caught: rejected`), 120_000);
        // Only the parent's last block was uploaded.
        const uploads = referee.lines.filter((l) => l.startsWith("publish "));
        assert.deepEqual(uploads.map((l) => l.split(" ").slice(-2).join(" ")), [
          `${net.fixture.manifest.components.block_002!.slice(0, 12)} 1/1`,
          `seal ${net.fixture.manifest.components.block_002!.slice(0, 12)}`,
        ]);
      } else {
        await referee.waitFor(
          new RegExp(`^outcome ${claimId} clean: every stage matches; the claim is settled$`),
          120_000,
        );
      }
      const chain = new ChainClient(net.rpc);
      const state = (await chain.claim(claimId))!.state as { status: string; reason?: string };
      assert.equal(state.status, forged ? "rejected" : "settled");
      const lc = await chain.lifecycle();
      assert.equal(lc.training_round, 0); // a growth never changes the training round
      assert.equal(lc.learning_root === net.fixture.root, forged);
    } finally {
      await referee.stop();
      await net.close();
    }
  });
}

Deno.test({
  name:
    "a worker committing a wrong chunk root cannot block the referee: it files a chunks challenge, uploads the object without paths and gets the claim rejected with the slash",
  ignore: Deno.env.get("NEURO_SLOW") !== "1",
  async fn() {
    const net = await startNetwork({ workers: 2, forge: [null, "chunks"], challengeBlocks: FORGED_WINDOW });
    const referee = await startTask("referee", refereeArgs(net), { listens: false });
    try {
      const chain = new ChainClient(net.rpc);
      const run = await runSponsor(net, ["--steps", "1", "--budget", "1"]);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      const claimId = (await referee.waitFor(/^claim [0-9a-f]{64} /)).split(" ")[1]!;
      // The numbers are honest: only the chunk root of stage 1's first parent component is wrong.
      await referee.waitFor(new RegExp(`^verdict ${claimId} stage 1 mismatch chunk root$`));
      await referee.waitFor(new RegExp(`^outcome ${claimId} caught: rejected`), 120_000);
      const c = await chain.claim(claimId);
      const state = c!.state as { status: string; reason: string; claim: { challenge: JsonObject } };
      assert.equal(state.status, "rejected");
      assert.equal(state.reason, "mismatch: chunk root");
      const { traces } = await claimRecord(chain, claimId);
      const genesis = await chain.manifest((await chain.lifecycle()).learning_root as string);
      const object = genesis.components[traces[1]!.partition[0]!]!;
      assert.equal(traces[1]!.chunk_roots[object], chunkRoot(new Uint8Array(0)));
      const ch = state.claim.challenge as {
        phase: string;
        object_root: string;
        needed: string[];
        sealed: string[];
      };
      assert.deepEqual([ch.phase, ch.object_root, ch.needed, ch.sealed], ["chunks", object, [object], [
        object,
      ]]);
      const ref = await chain.account(net.accounts.referee);
      assert.equal(
        ref.balance,
        50 * ATOMS_PER_NEURO + DEVNET_PARAMS.claim_bond / 2 - ref.nonce * DEVNET_PARAMS.fee,
      );
    } finally {
      await referee.stop();
      await net.close();
    }
  },
});
