import assert from "node:assert/strict";
import { type JsonObject, parseJson } from "../../../core/canonical.ts";
import { challenger, Net } from "./_harness.ts";
import { fraudChallenge, reserveAndClaim, uploadAndSeal } from "./_flow.ts";
import { withRpc } from "./_rpc.ts";

Deno.test("the RPC answers /lifecycle, /candidate, /claim, /work, /manifest, /batch as canonical JSON and /object/<root> as raw bytes", async () => {
  const net = new Net();
  const { claimId, step } = reserveAndClaim(net);
  fraudChallenge(net, claimId, 1, challenger);
  const root = step.traces[1]!.input;
  uploadAndSeal(net, claimId, root, challenger);
  await withRpc(net, async (url) => {
    const get = async (path: string) => {
      const res = await fetch(url + path);
      return [res.status, res.headers.get("content-type"), new Uint8Array(await res.arrayBuffer())] as const;
    };
    const json = async (path: string) => {
      const [status, , body] = await get(path);
      assert.equal(status, 200, path);
      const text = new TextDecoder().decode(body);
      return parseJson(text) as JsonObject;
    };
    const l = await json("/lifecycle");
    assert.deepEqual(Object.keys(l).sort(), [
      "assignment",
      "batches",
      "claim",
      "clip",
      "data",
      "data_root",
      "height",
      "learning_rate",
      "learning_root",
      "period",
      "serving_root",
      "training_round",
    ]);
    assert.equal(l.data, null);
    assert.equal((l.claim as JsonObject).claim_id, claimId);
    assert.equal(((l.claim as JsonObject).state as JsonObject).status, "uploading");
    assert.equal((await json("/candidate")).learning_root, net.model.root);
    const c = await json(`/claim?id=${claimId}`);
    assert.equal(Object.keys(c.metadata as JsonObject).length, 6);
    const w = await json(`/work?identity=${"ab".repeat(32)}`);
    assert.deepEqual(w, { identity: "ab".repeat(32), paid: false, claim_id: null });
    assert.deepEqual(await json(`/manifest?root=${net.model.root}`), net.model.manifest);
    assert.deepEqual(await json(`/batch?root=${step.record.batch}`), net.batches[0]);
    const [status, type, bytes] = await get(`/object/${root}`);
    assert.deepEqual([status, type], [200, "application/octet-stream"]);
    assert.deepEqual(bytes, net.objects.get(root));
    assert.equal((await get(`/object/${"cd".repeat(32)}`))[0], 404);
    assert.equal((await get(`/claim?id=${"cd".repeat(32)}`))[0], 404);
    assert.equal((await get(`/manifest?root=nothex`))[0], 404);
  });
  net.app.close();
});
