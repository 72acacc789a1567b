import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonical, type JsonValue, parseJson } from "../../../core/canonical.ts";
import { sha256Hex } from "../../../core/digest.ts";
import { MAX_TX_BYTES } from "../../../core/limits.ts";
import { startNode, type ValidatorNode } from "../../../ledger/engine/node.ts";
import { parseBroadcastAnswer, parseTxAnswer } from "../../../actors/runtime/rpc_types.ts";
import { alice, bob, testGenesis, tx } from "../_fixture.ts";

async function withNode(fn: (node: ValidatorNode) => Promise<void>): Promise<void> {
  const home = await Deno.makeTempDir();
  // An interval of an hour: no block is made while the test runs, so "nothing applied" is observable.
  const node = await startNode({ home, genesis: testGenesis(), intervalMs: 3_600_000, log: () => {} });
  try {
    await fn(node);
  } finally {
    await node.stop();
    await Deno.remove(home, { recursive: true });
  }
}

async function call(url: string, init?: RequestInit): Promise<[number, JsonValue]> {
  const res = await fetch(url, init);
  return [res.status, parseJson(await res.text())];
}

const json = { "content-type": "application/json" };

async function unchanged(node: ValidatorNode): Promise<void> {
  const [, status] = await call(`${node.url}/status`);
  assertEquals((status as { mempool: number; height: number }).mempool, 0);
  assertEquals((status as { height: number }).height, 0);
  const [, account] = await call(`${node.url}/account/${alice.accountId}`);
  assertEquals(account, { id: alice.accountId, balance: 10_000_000, nonce: 0, height: 0 });
}

Deno.test("broadcast_tx admits a signed transfer: the hash is sha256 of the body and /tx says pending", async () => {
  await withNode(async (node) => {
    const body = canonical(tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 }));
    const [status, answer] = await call(`${node.url}/broadcast_tx`, { method: "POST", headers: json, body });
    assertEquals(status, 200);
    const parsed = parseBroadcastAnswer(answer);
    assertEquals(parsed, { hash: sha256Hex(new TextEncoder().encode(body)), check: { ok: true } });
    assertEquals(parseTxAnswer((await call(`${node.url}/tx?hash=${parsed.hash}`))[1]), { status: "pending" });
    assertEquals(parseTxAnswer((await call(`${node.url}/tx?hash=${"0".repeat(64)}`))[1]), {
      status: "unknown",
    });
  });
});

Deno.test("malformed JSON is refused with invalid_json and nothing is admitted", async () => {
  await withNode(async (node) => {
    const [status, answer] = await call(`${node.url}/broadcast_tx`, {
      method: "POST",
      headers: json,
      body: '{"body":',
    });
    assertEquals(status, 200);
    const parsed = parseBroadcastAnswer(answer);
    assertEquals(parsed.check.ok ? "" : parsed.check.code, "invalid_json");
    await unchanged(node);
  });
});

Deno.test("non-canonical JSON (spaces) is refused with non_canonical", async () => {
  await withNode(async (node) => {
    const body = JSON.stringify(tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 }), null, 1);
    const [, answer] = await call(`${node.url}/broadcast_tx`, { method: "POST", headers: json, body });
    const parsed = parseBroadcastAnswer(answer);
    assertEquals(parsed.check.ok ? "" : parsed.check.code, "non_canonical");
    await unchanged(node);
  });
});

Deno.test("an oversize body is refused with 413 too_large", async () => {
  await withNode(async (node) => {
    const body = new Uint8Array(MAX_TX_BYTES + 1).fill(0x20);
    const [status, answer] = await call(`${node.url}/broadcast_tx`, { method: "POST", headers: json, body });
    assertEquals([status, (answer as { code: string }).code], [413, "too_large"]);
    await unchanged(node);
  });
});

Deno.test("a wrong content type is refused with 415 bad_request", async () => {
  await withNode(async (node) => {
    const body = canonical(tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 }));
    const [status, answer] = await call(`${node.url}/broadcast_tx`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body,
    });
    assertEquals(status, 415);
    assertEquals(answer, {
      ok: false,
      code: "bad_request",
      message:
        "Cannot serve /broadcast_tx: content type is text/plain, expected application/json or application/octet-stream",
    });
    await unchanged(node);
  });
});

Deno.test("an unknown path, a wrong method and a bad hash or height get clear errors", async () => {
  await withNode(async (node) => {
    assertEquals(await call(`${node.url}/nope`), [404, {
      ok: false,
      code: "not_found",
      message: "Cannot serve /nope: no such path",
    }]);
    assertEquals((await call(`${node.url}/broadcast_tx`))[0], 405);
    assertEquals((await call(`${node.url}/tx?hash=ABC`))[1], {
      ok: false,
      code: "bad_request",
      message: 'Cannot look up transaction: hash is "ABC", expected 64 hex',
    });
    assertEquals((await call(`${node.url}/block?height=x`))[0], 400);
    assertEquals(await call(`${node.url}/block?height=1`), [404, {
      ok: false,
      code: "not_found",
      message: "Cannot look up block: height 1 is not committed",
    }]);
    assertEquals((await call(`${node.url}/account/02zz`))[0], 404);
    await unchanged(node);
  });
});

Deno.test("/validators lists the genesis validators with power 4", async () => {
  await withNode(async (node) => {
    const [status, answer] = await call(`${node.url}/validators`);
    assertEquals(status, 200);
    const v = answer as { height: number; validators: { power: number; state: JsonValue }[] };
    assertEquals(v.validators.map((x) => [x.power, x.state]), [[4, { status: "active" }], [4, {
      status: "active",
    }]]);
  });
});
