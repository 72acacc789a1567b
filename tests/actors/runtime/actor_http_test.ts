import assert from "node:assert/strict";
import { serveActor } from "../../../actors/runtime/actor_http.ts";
import { defineActor, DurableActor } from "../../../actors/runtime/durable.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { TransportClient } from "../../../actors/runtime/transport.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { tempDir } from "./_temp.ts";

const TOKEN = "c3".repeat(32);

Deno.test("an actor served over HTTP delivers once, re-delivers identical bytes, and refuses malformed bodies", async () => {
  let runs = 0;
  const actor = await DurableActor.open(
    Journal.open(`${tempDir("actor_http_test_")}/journal.sqlite`),
    defineActor({
      name: "http",
      machines: [],
      handlers: {
        double: (_ctx, input) => {
          runs++;
          return Promise.resolve((input as number) * 2);
        },
      },
      queries: { runs: () => runs },
    }),
  );
  const server = serveActor(actor, { token: TOKEN });
  const client = new TransportClient(server.url, TOKEN);
  try {
    const res = await fetch(`${server.url}/deliver`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ handler: "double", op_id: "op1", input: 21 }),
    });
    assert.equal(res.headers.get("content-type"), "application/json");
    const first = new Uint8Array(await res.arrayBuffer());
    assert.equal(new TextDecoder().decode(first), '{"ok":true,"value":42}');
    assert.deepEqual(
      await client.request("POST", "/deliver", { handler: "double", op_id: "op1", input: 21 }),
      first,
    );
    await assert.rejects(
      client.request("POST", "/deliver", { handler: "double", op_id: "op1", input: 22 }),
      (e: unknown) => e instanceof ProtocolError && e.code === "conflicting_operation",
    );
    await assert.rejects(
      client.request("POST", "/deliver", { handler: "double", op_id: "op2" }),
      (e: unknown) => e instanceof ProtocolError && e.code === "bad_request",
    );
    await assert.rejects(
      client.request("POST", "/deliver", new TextEncoder().encode("{not json")),
      (e: unknown) => e instanceof ProtocolError && e.code === "invalid_json",
    );
    assert.deepEqual(await client.json("POST", "/query", { name: "runs", input: null }), 1);
    assert.deepEqual(actor.journal.operations().map((o) => o.opId), ["op1"]);
  } finally {
    await server.close();
    actor.journal.close();
  }
});
