import assert from "node:assert/strict";
import { ChainClient } from "../../../actors/common/chain.ts";
import { trainStep } from "../../../kernels/step.ts";
import { place } from "../../../kernels/placement.ts";
import { assertFirstStepPaidOnce, BATCHES, capacities, runSponsor, startNetwork } from "./_network.ts";
import { TINY } from "../worker/_fixture.ts";
import { startTask } from "../worker/_process.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../../workflows/params.ts";
import { canonical } from "../../../core/canonical.ts";
import { alteredCopy, journalEvents, replayJournalProcess } from "./_journal.ts";

Deno.test("a sponsor with two workers settles two steps on a real validator; each is paid once, to the reserved workers", async () => {
  const net = await startNetwork({ workers: 2 });
  try {
    const chain = new ChainClient(net.rpc);
    const run = await runSponsor(net, ["--steps", "2"]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^done 2 settled, 2\/6 attempts$/m);
    assert.match(run.stdout, /^step 0 settled height=\d+ loss=0x/m);
    assert.match(run.stdout, /^step 1 settled height=\d+ loss=0x/m);
    // The chain trained exactly the reference steps: the learning root is the second step's candidate.
    const partitions = place(TINY, capacities(2));
    const f = net.fixture;
    const s0 = trainStep({
      model: f.model,
      manifest: f.manifest,
      batch: BATCHES[0]!,
      partitions,
      learningRate: 0.05,
      clip: 1,
      step: 0,
    });
    const s1 = trainStep({
      model: s0.candidate,
      manifest: s0.candidateManifest,
      batch: BATCHES[1]!,
      partitions,
      learningRate: 0.05,
      clip: 1,
      step: 1,
    });
    const lc = await chain.lifecycle();
    assert.equal(lc.training_round, 2);
    assert.equal(lc.learning_root, s1.candidateRoot);
    assert.equal(lc.serving_root, f.root);
    // 1,000,000 atoms minted per step: 800,000 split between the two reserved workers.
    for (const w of net.accounts.workers) assert.equal((await chain.account(w)).balance, 2 * 400_000);
    // The sponsor journaled each job as events of the ledger's training machine: the claim, then the tick
    // that settled it, ending in exactly the state the validator reports for that claim.
    const journal = `${net.sponsorHome}/journal.sqlite`;
    const budget = JSON.parse(Deno.readTextFileSync(`${net.sponsorHome}/budget.json`)) as {
      attempts: { end: { claim_id: string } }[];
    };
    const instances: string[] = [];
    for (const at of budget.attempts) {
      const answer = (await chain.claim(at.end.claim_id))!;
      const state = answer.state as { assignment: { id: string } };
      instances.push(state.assignment.id);
      const events = journalEvents(journal, state.assignment.id);
      assert.deepEqual(events.map((e) => JSON.parse(e.event).type), ["claim", "tick"]);
      assert.equal(events.at(-1)!.state, canonical(answer.state));
      assert.equal(JSON.parse(events.at(-1)!.state).status, "settled");
    }
    // `deno task replay` re-runs both jobs; a copy with the first claim's model root altered fails there.
    const replayed = await replayJournalProcess(journal);
    assert.equal(replayed.code, 0, replayed.stderr);
    const listed = replayed.report.instances as { instance: string; machine: string; events: number }[];
    assert.deepEqual(
      listed.map((i) => [i.instance, i.machine, i.events]),
      instances.map((i) => [i, "training", 2]),
    );
    const bad = alteredCopy(journal, instances[0]!, 0, (e) => ({ ...e, model_root: "e".repeat(64) }));
    try {
      const failed = await replayJournalProcess(bad);
      assert.equal(failed.code, 1);
      const d = failed.report.divergence as { instance: string; index: number };
      assert.deepEqual([d.instance, d.index], [instances[0], 0]);
    } finally {
      Deno.removeSync(bad);
    }
    // Running the sponsor again for the same two steps does nothing: no attempt, no transaction.
    const again = await runSponsor(net, ["--steps", "2"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^done 2 settled, 2\/6 attempts$/m);
    assert.equal((await chain.lifecycle()).training_round, 2);
  } finally {
    await net.close();
  }
});

Deno.test("two sponsors started together take turns on the ledger: each settles its step, no step is paid twice", async () => {
  const net = await startNetwork({ workers: 2, extraSponsors: 1 });
  try {
    const chain = new ChainClient(net.rpc);
    const [a, b] = await Promise.all([
      runSponsor(net, ["--steps", "1"]),
      runSponsor(net, ["--steps", "1"], {}, net.extraSponsorHomes[0]!),
    ]);
    assert.equal(a.code, 0, a.stdout + a.stderr);
    assert.equal(b.code, 0, b.stdout + b.stderr);
    for (const r of [a, b]) assert.match(r.stdout, /^done 1 settled, [12]\/4 attempts$/m);
    const lc = await chain.lifecycle();
    assert.equal(lc.training_round, 2);
    for (const w of net.accounts.workers) assert.equal((await chain.account(w)).balance, 2 * 400_000);
    // A sponsor that lost the race to reserve spent an attempt (a rejected reserve) but no bond.
    for (const [id, r] of [[net.accounts.sponsor, a], [net.accounts.extraSponsors[0]!, b]] as const) {
      const acct = await chain.account(id);
      const attempts = Number(/done 1 settled, (\d)\//.exec(r.stdout)![1]);
      assert.equal(acct.balance, 200 * ATOMS_PER_NEURO - acct.nonce * DEVNET_PARAMS.fee);
      assert.ok(
        acct.nonce >= 2 && acct.nonce <= attempts * 2,
        `nonce ${acct.nonce} for ${attempts} attempts`,
      );
    }
  } finally {
    await net.close();
  }
});

Deno.test("a sponsor whose worker dies mid-step sees the assignment expire (10% of the bond burned), charges no second attempt beyond its budget, and exits", async () => {
  const net = await startNetwork({ workers: 2 });
  try {
    const chain = new ChainClient(net.rpc);
    const sponsor = await startTask(
      "sponsor",
      [
        "--home",
        net.sponsorHome,
        "--rpc",
        net.rpc,
        "--workers",
        net.workersFile,
        "--poll-ms",
        "100",
        "--steps",
        "1",
        "--budget",
        "1",
      ],
      { listens: false },
    );
    await sponsor.waitFor(/^step 0 reserve /);
    net.workers[1]!.child.kill("SIGKILL");
    const status = await sponsor.status;
    assert.equal(status.code, 1);
    assert.match(sponsor.lines.join("\n"), /^step 0 failed: assignment [0-9a-f]{64} is no longer live/m);
    const budget = JSON.parse(await Deno.readTextFile(`${net.sponsorHome}/budget.json`));
    assert.equal(budget.attempts.length, 1);
    assert.equal(budget.attempts[0].end.outcome, "failed");
    const sp = await chain.account(net.accounts.sponsor);
    assert.equal(sp.nonce, 1); // the reserve only: no claim was signed
    assert.equal(sp.balance, 200 * ATOMS_PER_NEURO - DEVNET_PARAMS.claim_bond / 10 - DEVNET_PARAMS.fee);
    assert.equal((await chain.lifecycle()).training_round, 0);
    // The journal holds the job's one event: the tick that expired it, burning 10% and releasing 90%.
    const journal = `${net.sponsorHome}/journal.sqlite`;
    const [job] = (await replayJournalProcess(journal)).report.instances as { instance: string }[];
    const events = journalEvents(journal, job!.instance);
    assert.deepEqual(events.map((e) => JSON.parse(e.event)), [{ type: "tick" }]);
    const expired = JSON.parse(events[0]!.state) as { status: string; moves: unknown[] };
    assert.equal(expired.status, "expired");
    assert.deepEqual(expired.moves, [
      { account: net.accounts.sponsor, amount: DEVNET_PARAMS.claim_bond * 0.9, op: "release" },
      { amount: DEVNET_PARAMS.claim_bond / 10, op: "burn" },
    ]);
  } finally {
    await net.close();
  }
});

Deno.test("a sponsor pointed at a chain without a training section fails clearly and charges nothing", async () => {
  const { writeDevnetGenesis } = await import("../../../genesis/ledger_devnet.ts");
  const { startProc, stopProc } = await import("../../e2e/_ledger_procs.ts");
  const dir = Deno.makeTempDirSync({ prefix: "sponsor-no-training-" });
  const { genesisPath, homes } = await writeDevnetGenesis({
    out: `${dir}/net`,
    validators: 1,
    blockIntervalMs: 150,
  });
  const validator = await startProc(homes[0]!, genesisPath);
  try {
    const w = await startTask("worker", ["--home", `${dir}/worker`]);
    try {
      await Deno.writeTextFile(
        `${dir}/workers.json`,
        JSON.stringify([{ url: w.url, token_file: `${dir}/worker/token` }]),
      );
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          "tasks/sponsor.ts",
          "--home",
          `${dir}/sponsor`,
          "--rpc",
          validator.url,
          "--workers",
          `${dir}/workers.json`,
        ],
        cwd: new URL("../../../", import.meta.url).pathname,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 1);
      assert.equal(
        new TextDecoder().decode(out.stderr),
        `error: Cannot train on chain at ${validator.url}: its genesis has no model or training section (invalid_value)\n`,
      );
      const budget = JSON.parse(await Deno.readTextFile(`${dir}/sponsor/budget.json`));
      assert.deepEqual(budget.attempts, []);
    } finally {
      await w.stop();
    }
  } finally {
    await stopProc(validator);
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("after lost acknowledgements on both sides the sponsor and the worker resume the same step, settled and paid once", async () => {
  // Worker 1 journals its forward and dies before replying; later the sponsor's claim is broadcast and the
  // sponsor dies before learning the outcome. Both come back and the same step (round 0) settles.
  const net = await startNetwork({ workers: 2, workerEnv: [undefined, { NEURO_CRASH_AT: "complete:2" }] });
  let closing = false;
  try {
    const restarted = net.workers[1]!.status.then(async () => {
      if (!closing) await net.restartWorker(1);
    });
    const first = await runSponsor(net, ["--steps", "1"], { NEURO_CRASH_AT: "submit_sent:2" });
    assert.equal(first.signal, "SIGKILL", first.stdout + first.stderr);
    await restarted;
    const worker1 = net.workers[1]!;
    const second = await runSponsor(net, ["--steps", "1"]);
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.match(second.stdout, /^step 0 resume height=\d+$/m);
    assert.doesNotMatch(second.stdout, /^step 0 (open|forward)/m); // the claim was journaled: nothing recomputed
    assert.match(second.stdout, /^done 1 settled, 1\/4 attempts$/m);
    await assertFirstStepPaidOnce(net);
    // The restarted worker answered the lost forward from its journal: it never ran that forward again.
    const status = await new (await import("../../../actors/common/worker_client.ts")).WorkerClient(
      worker1.url,
      Deno.readTextFileSync(`${net.workerHomes[1]}/token`).trim(),
    ).status();
    assert.equal(status.computations.forward, 1); // rebuilt once for the backward, not for the re-delivery
  } finally {
    closing = true;
    await net.close();
  }
});

Deno.test("a sponsor killed right after it journals the job's instance, its claim event or its settlement tick resumes the same job: each event recorded once, in the ledger's state", async () => {
  const net = await startNetwork({ workers: 2 });
  try {
    const chain = new ChainClient(net.rpc);
    const points = ["instance:1", "event:1", "event:2"];
    for (const [k, at] of points.entries()) {
      const crashed = await runSponsor(net, ["--steps", String(k + 1)], { NEURO_CRASH_AT: at });
      assert.equal(crashed.signal, "SIGKILL", `${at}: ${crashed.stdout}${crashed.stderr}`);
      const resumed = await runSponsor(net, ["--steps", String(k + 1)]);
      assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr);
      assert.match(resumed.stdout, new RegExp(`^done ${k + 1} settled, ${k + 1}/\\d+ attempts$`, "m"));
      assert.doesNotMatch(resumed.stdout, /journal differs/);
    }
    assert.equal((await chain.lifecycle()).training_round, 3);
    const journal = `${net.sponsorHome}/journal.sqlite`;
    const budget = JSON.parse(Deno.readTextFileSync(`${net.sponsorHome}/budget.json`)) as {
      attempts: { end: { claim_id: string } }[];
    };
    assert.equal(budget.attempts.length, 3);
    for (const at of budget.attempts) {
      const answer = (await chain.claim(at.end.claim_id))!;
      const events = journalEvents(journal, (answer.state as { assignment: { id: string } }).assignment.id);
      assert.deepEqual(events.map((e) => JSON.parse(e.event).type), ["claim", "tick"]);
      assert.equal(events.at(-1)!.state, canonical(answer.state));
    }
    const replayed = await replayJournalProcess(journal);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.equal((replayed.report.instances as unknown[]).length, 3);
  } finally {
    await net.close();
  }
});
