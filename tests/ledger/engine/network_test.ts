import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { canonical, type JsonValue, parseJson } from "../../../core/canonical.ts";
import { startNode, type ValidatorNode } from "../../../ledger/engine/node.ts";
import { createConsensusKeyFile } from "../../../ledger/consensus_key.ts";
import { creditVerifierReward } from "../../../ledger/boundary.ts";
import { alice, bob, cons, consSeeds, owners, testGenesis, tx } from "../_fixture.ts";

async function post(url: string, body: string | Uint8Array): Promise<JsonValue> {
  const res = await fetch(`${url}/broadcast_tx`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body as BodyInit,
  });
  return parseJson(await res.text());
}

async function get(url: string): Promise<JsonValue> {
  return parseJson(await (await fetch(url)).text());
}

async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("a proposer and two replicas agree on every block, commit transfers and pay committers the verifier reward", async () => {
  const dir = await Deno.makeTempDir();
  const genesis = testGenesis();
  const hook = {
    // Every block issues 1,000 atoms of verifier reward; the next block pays it to the committers.
    afterTransactions: (state: Parameters<typeof creditVerifierReward>[0], env: { height: number }) =>
      creditVerifierReward(state, env.height, 1_000),
  };
  await createConsensusKeyFile(`${dir}/p/consensus.key`, consSeeds[0]);
  await createConsensusKeyFile(`${dir}/r1/consensus.key`, consSeeds[1]);
  const nodes: ValidatorNode[] = [];
  try {
    const quiet = () => {};
    // 150 ms blocks leave a loaded machine time to get a replica's attestation back before the next block.
    const proposer = await startNode({ home: `${dir}/p`, genesis, intervalMs: 150, app: hook, log: quiet });
    nodes.push(proposer);
    nodes.push(await startNode({ home: `${dir}/r1`, genesis, follow: proposer.url, app: hook, log: quiet }));
    nodes.push(await startNode({ home: `${dir}/r2`, genesis, follow: proposer.url, app: hook, log: quiet }));
    const sent = tx(alice, "transfer", 0, { to: bob.accountId, amount: 123 });
    const answer = await post(nodes[2]!.url, canonical(sent)) as { hash: string; check: JsonValue };
    assertEquals(answer.check, { ok: true });
    await until(
      "commit of the transfer",
      async () =>
        ((await get(`${proposer.url}/tx?hash=${answer.hash}`)) as { status: string }).status === "committed",
    );
    const committed = await get(`${proposer.url}/tx?hash=${answer.hash}`) as { height: number };
    const target = committed.height + 4;
    await until("replicas to reach the target", () => nodes.every((n) => n.app.info().height >= target));
    for (let h = 1; h <= target; h++) {
      const hashes = nodes.map((n) => n.app.store.block(h)!.app_hash);
      equal(new Set(hashes).size, 1, `height ${h}: ${hashes.join(" ")}`);
    }
    // The replica keeps following while it answers: its answer names the height it was read at.
    const bobThere = await get(`${nodes[1]!.url}/account/${bob.accountId}`) as { height: number };
    assertEquals(bobThere.height >= target, true);
    assertEquals(bobThere, { id: bob.accountId, balance: 123, nonce: 0, height: bobThere.height });
    // Some block carries both validators' attestations of its predecessor, and both owners got paid. An
    // attestation that arrives after the next block is proposed misses it (50 ms blocks on a loaded machine
    // may miss many), so wait for one that made it rather than looking only up to the target height.
    const withBoth = () => {
      const head = nodes[0]!.app.info().height;
      for (let h = 1; h <= head; h++) {
        const block = nodes[0]!.app.store.block(h)!.block as { last_commit: unknown[] };
        if (block.last_commit.length === 2) return true;
      }
      return false;
    };
    await until("a block carrying both attestations", withBoth, 30_000);
    const paid = owners.map((o) =>
      (nodes[0]!.app.query(`/account/${o.accountId}`) as { balance: number }).balance
    );
    equal(paid[0]! > 2_000_000, true, `owner 0 balance ${paid[0]}`);
    equal(paid[1]! > 0, true, `owner 1 balance ${paid[1]}`);
    equal(cons.length, 4);
  } finally {
    for (const n of nodes.reverse()) await n.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a replica forwards broadcasts to the proposer and reports a transaction pending there as pending", async () => {
  const dir = await Deno.makeTempDir();
  const nodes: ValidatorNode[] = [];
  try {
    const quiet = () => {};
    const genesis = testGenesis();
    const proposer = await startNode({ home: `${dir}/p`, genesis, intervalMs: 3_600_000, log: quiet });
    nodes.push(proposer);
    const replica = await startNode({ home: `${dir}/r`, genesis, follow: proposer.url, log: quiet });
    nodes.push(replica);
    const answer = await post(
      replica.url,
      canonical(tx(alice, "transfer", 0, { to: bob.accountId, amount: 5 })),
    ) as {
      hash: string;
      check: JsonValue;
    };
    assertEquals(answer.check, { ok: true });
    assertEquals(await get(`${proposer.url}/tx?hash=${answer.hash}`), { status: "pending" });
    assertEquals(await get(`${replica.url}/tx?hash=${answer.hash}`), { status: "pending" });
    assertEquals(await get(`${replica.url}/tx?hash=${"1".repeat(64)}`), { status: "unknown" });
  } finally {
    for (const n of nodes.reverse()) await n.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a replica given a block that does not follow its head stops with invalid_block and commits nothing", async () => {
  const dir = await Deno.makeTempDir();
  const genesis = testGenesis();
  // A rogue proposer that answers block 1 with a wrong previous app hash.
  const rogue = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    if (url.pathname !== "/block") return new Response("{}", { status: 404 });
    const block = {
      chain_id: "test-chain",
      height: 1,
      time: 1_700_000_001_000,
      prev_app_hash: "00".repeat(32),
      last_commit: [],
      txs: [],
    };
    return new Response(canonical({ height: 1, block, app_hash: "11".repeat(32), results: [] }));
  });
  const lines: string[] = [];
  const replica = await startNode({
    home: `${dir}/r`,
    genesis,
    follow: `http://127.0.0.1:${rogue.addr.port}`,
    log: (l) => lines.push(l),
  });
  try {
    const halt = await replica.done;
    assertEquals([halt?.code, halt?.height, halt?.proposer_app_hash], ["invalid_block", 1, "11".repeat(32)]);
    equal(halt!.message.includes("prev_app_hash is 0000"), true, halt!.message);
    equal(replica.app.info().height, 0);
    equal(lines.some((l) => l.startsWith("HALT invalid_block at height 1")), true, lines.join("\n"));
  } finally {
    await replica.stop();
    await rogue.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
