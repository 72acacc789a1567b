/**
 * `deno task vote` against a real validator process: a data-lifecycle genesis with four equal owners, a
 * proposal broadcast by the sponsor, then votes cast with the task from validator homes until it activates,
 * with a replica process that must reach the same app hashes.
 */
import assert from "node:assert/strict";
import { createKeyFile } from "../../ledger/keys.ts";
import { LedgerClient } from "../../ledger/rpc/client.ts";
import { signBody, type TxBody } from "../../ledger/envelope.ts";
import { consSeeds } from "../ledger/_fixture.ts";
import { sponsor } from "../ledger/training/_harness.ts";
import { dataNet, nextCohort, voters } from "../ledger/data/_net.ts";
import { committedHashes, getJson, prepare, startProc, stopProc, until } from "../e2e/_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function vote(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-net=127.0.0.1",
      "tasks/vote.ts",
      ...args,
    ],
    cwd: ROOT,
  }).output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
}

Deno.test("deno task vote --help prints its usage; usage mistakes exit 2 with one error line", async () => {
  const help = await vote(["--help"]);
  assert.equal(help.code, 0);
  assert.ok(help.out.startsWith("deno task vote --home VALIDATOR_HOME --rpc URL --proposal ID"), help.out);
  const p = "ab".repeat(32);
  const cases: [string[], string][] = [
    [[], "error: --home is required"],
    [["--home", "/tmp/x", "--proposal", p, "--approve"], "error: --rpc is required"],
    [["--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--approve"], "error: --proposal is required"],
    [
      ["--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--proposal", "xyz", "--approve"],
      "error: --proposal is xyz",
    ],
    [["--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--proposal", p], "error: give exactly one of"],
    [
      ["--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--proposal", p, "--approve", "--reject"],
      "error: give exactly one of",
    ],
    [["--nope"], "error: Unknown option"],
  ];
  for (const [args, start] of cases) {
    const r = await vote(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.err}`);
    assert.ok(r.err.startsWith(start), r.err);
  }
});

Deno.test("deno task vote casts each owner's vote once against a real validator and the proposal activates", async () => {
  const dir = await Deno.makeTempDir();
  // Long enough a voting window for eight task processes on a loaded machine (100 ms blocks).
  const net = dataNet({ params: { proposal_blocks: 3_000 } });
  const genesisPath = await prepare(dir, net.genesis, consSeeds);
  const homes = [0, 1, 2, 3].map((i) => `${dir}/v${i}`);
  // The owners' account keys, as the devnet builder writes them into each validator home.
  for (const [i, home] of homes.entries()) await createKeyFile(`${home}/account.key`, seedOf(i));
  const node = await startProc(homes[0]!, genesisPath, { intervalMs: 100 });
  const replica = await startProc(homes[1]!, genesisPath, { follow: node.url });
  try {
    const client = new LedgerClient(node.url);
    const status = await client.status();
    const cohort = nextCohort(net, "vote");
    const proposal = signBody({
      kind: "propose_data",
      chain_id: status.chain_id,
      nonce: 0,
      data_root: cohort.root,
      metadata: cohort.metadata,
    } as TxBody, sponsor);
    const sent = await client.broadcast(proposal);
    assert.equal(sent.check.ok, true, sent.check.message);
    assert.equal((await client.waitForTx(sent.hash)).status, "committed");
    const id = (await getJson<{ proposal_id: string }>(`${node.url}/data/proposal`)).proposal_id;
    const args = (
      home: string,
      ...rest: string[]
    ) => ["--home", home, "--rpc", node.url, "--proposal", id, ...rest];

    const first = await vote(args(homes[0]!, "--approve", "--json"));
    assert.equal(first.code, 0, first.err);
    const answer = JSON.parse(first.out);
    assert.deepEqual(
      [answer.proposal_id, answer.owner, answer.approve, answer.status],
      [id, voters[0]!.accountId, true, "committed"],
    );
    // A rerun finds the journaled vote and prints the same outcome without signing again.
    const again = await vote(args(homes[0]!, "--approve", "--json"));
    assert.equal(again.code, 0, again.err);
    assert.deepEqual(JSON.parse(again.out), answer);
    const flip = await vote(args(homes[0]!, "--reject"));
    assert.equal(flip.code, 1);
    assert.match(flip.err, /^error: .*a vote cannot change\) \(conflicting_operation\)\n$/);
    // The same owner from another home (a fresh journal) is refused by the ledger.
    await createKeyFile(`${dir}/copy/account.key`, seedOf(0));
    const twice = await vote(args(`${dir}/copy`, "--approve"));
    assert.equal(twice.code, 1);
    assert.match(twice.err, /already voted \(already_voted\)\n$/);
    const unknown = await vote([
      "--home",
      homes[1]!,
      "--rpc",
      node.url,
      "--proposal",
      "cd".repeat(32),
      "--approve",
    ]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /\(unknown_proposal\)\n$/);

    const second = await vote(args(homes[1]!, "--approve"));
    assert.equal(second.code, 0, second.err);
    assert.match(second.out, new RegExp(`^voted approve on proposal ${id} at height \\d+\\n$`));
    const no = await vote(args(homes[3]!, "--reject"));
    assert.equal(no.code, 0, no.err);
    const third = await vote(args(homes[2]!, "--approve"));
    assert.equal(third.code, 0, third.err);
    await until("the cohort activates", async () => {
      const l = await getJson<{ data: { cohort: { data_root: string } | null } }>(`${node.url}/lifecycle`);
      return l.data.cohort?.data_root === cohort.root;
    });
    const p = await getJson<{ state: { status: string; votes: [string, boolean][] } }>(
      `${node.url}/data/proposal?id=${id}`,
    );
    assert.equal(p.state.status, "activated");
    assert.deepEqual(
      p.state.votes,
      voters.map((v, i) => [v.accountId, i !== 3] as [string, boolean]).sort((
        a,
        b,
      ) => (a[0] < b[0] ? -1 : 1)),
    );
    // The replica applied the same proposal, votes and activation to the same app hashes.
    await until("the replica follows", async () => {
      const [a, b] = await Promise.all(
        [node.url, replica.url].map((u) => getJson<{ height: number }>(`${u}/status`)),
      );
      return b!.height >= a!.height - 1;
    });
    await stopProc(replica);
    const [mine, theirs] = [committedHashes(homes[0]!), committedHashes(homes[1]!)];
    assert.ok(theirs.size > 10);
    for (const [h, hash] of theirs) assert.equal(hash, mine.get(h), `app hash at height ${h}`);
  } finally {
    await stopProc(replica);
    await stopProc(node);
    await Deno.remove(dir, { recursive: true });
  }
});

function seedOf(i: number): string {
  return (0xe0 + i).toString(16).repeat(32);
}
