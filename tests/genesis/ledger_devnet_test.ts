import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { genesisId, parseGenesis } from "../../genesis/schema.ts";
import { writeDevnetGenesis } from "../../genesis/ledger_devnet.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { loadConsensusKeyFile } from "../../ledger/consensus_key.ts";

Deno.test("the devnet builder writes a genesis of 4 validators whose 0600 key files match it", async () => {
  const out = await Deno.makeTempDir();
  try {
    const r = await writeDevnetGenesis({ out, time: 1_700_000_000_000 });
    const value = parseJson(await Deno.readTextFile(r.genesisPath));
    const g = parseGenesis(value);
    assertEquals(genesisId(value), r.genesisId);
    assertEquals([g.chain_id, g.validators.length, g.accounts.length, g.genesis_time], [
      "neuroshard-devnet",
      4,
      5,
      1_700_000_000_000,
    ]);
    for (const [i, home] of r.homes.entries()) {
      for (const f of ["consensus.key", "account.key"]) {
        assertEquals((await Deno.stat(`${home}/${f}`)).mode! & 0o777, 0o600);
      }
      assertEquals(
        (await loadConsensusKeyFile(`${home}/consensus.key`)).publicKey,
        g.validators[i]!.consensus_key,
      );
      assertEquals((await loadKeyFile(`${home}/account.key`)).accountId, g.validators[i]!.owner);
    }
    assertEquals((await loadKeyFile(r.faucet)).accountId, g.accounts[0]!.id);
    let code = "";
    try {
      await writeDevnetGenesis({ out });
    } catch (e) {
      code = (e as ProtocolError).code;
    }
    assertEquals(code, "key_exists");
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("the devnet builder writes a data section when given one, and then no genesis batches", async () => {
  const { Net } = await import("../ledger/training/_harness.ts");
  const { dataSection } = await import("../ledger/data/_net.ts");
  const g = new Net({ data: dataSection() }).genesis;
  const out = await Deno.makeTempDir();
  try {
    const r = await writeDevnetGenesis({ out, model: g.model!, training: g.training!, data: dataSection() });
    const parsed = parseGenesis(parseJson(await Deno.readTextFile(r.genesisPath)));
    assertEquals(parsed.data?.sources.map((s) => s.name), ["chat-retention", "chat-train"]);
    assertEquals(parsed.training?.batches, []);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
