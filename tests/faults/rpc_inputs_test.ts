/**
 * Small RPC inputs against a real validator process: heights are decimal digits only, and a malformed
 * attestation is a 4xx; each refusal leaves the chain where it was.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { consSeeds, testGenesis } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, startProc, stopProc, until } from "../e2e/_ledger_procs.ts";

Deno.test("/block?height= takes decimal digits only and POST /attest {} is 400 bad_request; the state is unchanged", async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 1));
    // One block only (the interval is an hour), so the app hash can be compared before and after.
    const node = await startProc(`${dir}/v0`, path, { intervalMs: 3_600_000 });
    procs.push(node);
    const before = await getJson<{ height: number; app_hash: string }>(`${node.url}/status`);
    for (const height of ["0x10", "1e1", "+1", " 1", "1.0", "01", "-1", "0", "", "9007199254740993"]) {
      const res = await fetch(`${node.url}/block?height=${encodeURIComponent(height)}`);
      const body = JSON.parse(await res.text());
      assertEquals([height, res.status, body.code], [height, 400, "bad_request"]);
    }
    const wait = await fetch(`${node.url}/block?height=1&wait=1e3`);
    assertEquals([wait.status, JSON.parse(await wait.text()).code], [400, "bad_request"]);
    const attest = await fetch(`${node.url}/attest`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assertEquals([attest.status, JSON.parse(await attest.text())], [400, {
      code: "bad_request",
      message: "Cannot record attestation: expected exactly height, app_hash, consensus_key, signature",
      ok: false,
    }]);
    await until("no block in between", () => true);
    assertEquals(await getJson(`${node.url}/status`), { ...before });
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
