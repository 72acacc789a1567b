import assert from "node:assert/strict";
import { ProtocolError } from "../../../core/errors.ts";
import { collectMachines, isMachine, loadMachines } from "../../../actors/runtime/machine_modules.ts";
import { counter } from "./_counter.ts";

Deno.test("machines are collected from direct exports, arrays, records and maps, once per name", () => {
  const found = collectMachines({
    counter,
    list: [counter],
    record: { c: counter },
    map: new Map([["c", counter]]),
    n: 1,
  });
  assert.deepEqual(found.map((m) => [m.name, m.version]), [["counter", 1]]);
  assert.equal(isMachine({ name: "x", version: 1 }), false);
});

Deno.test("two versions of one machine name in a module are refused", () => {
  assert.throws(
    () => collectMachines({ a: counter, b: { ...counter, version: 2 } }),
    (e: unknown) =>
      e instanceof ProtocolError && e.code === "bad_request" && /version 1 and 2/.test(e.message),
  );
});

Deno.test("loading a module without machines or a missing module is not_found", async () => {
  await assert.rejects(
    loadMachines([new URL("./_lossy_rpc.ts", import.meta.url).href]),
    (e: unknown) =>
      e instanceof ProtocolError && e.code === "not_found" && /exports no machine/.test(e.message),
  );
  await assert.rejects(
    loadMachines(["tests/actors/runtime/does_not_exist.ts"]),
    (e: unknown) => e instanceof ProtocolError && e.code === "not_found",
  );
  const loaded = await loadMachines([new URL("./_counter.ts", import.meta.url).href]);
  assert.deepEqual(loaded.map((m) => m.name), ["counter"]);
});
