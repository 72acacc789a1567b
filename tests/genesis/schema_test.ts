import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { genesisSupply, parseGenesis } from "../../genesis/schema.ts";
import { LedgerApp } from "../../ledger/app.ts";
import { testGenesis } from "../ledger/_fixture.ts";
import { conformanceVectors } from "../../genesis/conformance.ts";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return e instanceof ProtocolError ? `${e.code}: ${e.message}` : String(e);
  }
  return "accepted";
}

Deno.test("the test genesis parses with a supply of every balance plus every bond", () => {
  assertEquals(genesisSupply(parseGenesis(testGenesis())), 14_000_000);
});

Deno.test("a genesis with an unknown field, a missing field, a bad chain id or an odd bond is refused", () => {
  const g = testGenesis();
  assertEquals(
    code(() => parseGenesis({ ...g, extra: 1 })),
    "invalid_value: Cannot use genesis: unknown field extra",
  );
  const { codec: _, ...missing } = g;
  assertEquals(code(() => parseGenesis(missing)), "invalid_value: Cannot use genesis: missing field codec");
  assertEquals(
    code(() => parseGenesis({ ...g, chain_id: "Big Chain" })),
    'invalid_value: Cannot use genesis: chain_id is "Big Chain", expected 1-64 of [a-z0-9._-]',
  );
  const validators = (g.validators as JsonObject[]).map((v) => ({ ...v, amount: 300_000 }));
  assertEquals(
    code(() => parseGenesis({ ...g, validators })),
    "invalid_value: Cannot use genesis: validators[0].amount is not a multiple of bond_unit",
  );
  assertEquals(
    code(() => parseGenesis({ ...g, consensus: { epoch_blocks: 5 } })).startsWith("invalid_value"),
    true,
  );
});

Deno.test("a node refuses to open state created with another genesis (genesis_mismatch)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = LedgerApp.open(`${dir}/state.sqlite`, testGenesis());
    const created = first.info().genesis_id;
    first.close();
    const other = { ...testGenesis(), chain_id: "other-chain" };
    throws(() => LedgerApp.open(`${dir}/state.sqlite`, other), (e: unknown) => {
      assertEquals((e as ProtocolError).code, "genesis_mismatch");
      assertEquals((e as Error).message.includes(created), true);
      return true;
    });
    const again = LedgerApp.open(`${dir}/state.sqlite`, testGenesis());
    assertEquals(again.info().genesis_id, created);
    again.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a genesis must pin a conformance vectors document of at most 16 KiB", () => {
  const g = testGenesis();
  assertEquals(
    code(() => parseGenesis({ ...g, vectors: null })),
    "invalid_value: Cannot use genesis: vectors is null, expected a neuroshard-kernel-vectors-v1 document",
  );
  assertEquals(
    code(() => parseGenesis({ ...g, vectors: { format: "other" } })),
    'invalid_value: Cannot use genesis: vectors is {"format":"other"}, expected a neuroshard-kernel-vectors-v1 document',
  );
  const big = { ...(g.vectors as JsonObject), padding: "x".repeat(16 * 1024) };
  assertEquals(
    code(() => parseGenesis({ ...g, vectors: big })),
    `invalid_value: Cannot use genesis: vectors is ${
      JSON.stringify(big).length
    } bytes, expected at most 16384`,
  );
  assertEquals(parseGenesis(g).vectors, conformanceVectors());
});
