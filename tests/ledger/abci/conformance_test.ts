/**
 * ABCI conformance without a full node: CometBFT's own `abci-cli` (installed by `deno task cometbft:install`,
 * the same `go install`) drives info, echo, check_tx, finalize_block, commit and query against our server.
 * Ignored, with the reason printed, when abci-cli is not installed.
 */
import { assertEquals } from "../../_assert.ts";
import { canonical, canonicalBytes } from "../../../core/canonical.ts";
import { toHex } from "../../../core/hex.ts";
import { installedTool } from "../../../ledger/abci/cometbft_pin.ts";
import { abciCode } from "../../../ledger/abci/wire_values.ts";
import { alice, bob, snapshot, testApp, tx } from "../_fixture.ts";
import { serve } from "./_abci_fixture.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const cli = await installedTool(ROOT, "abci-cli");
if (!cli) {
  console.log("abci-cli conformance ignored: abci-cli is not installed (run deno task cometbft:install)");
}

/** Runs abci-cli and returns its `-> key: value` lines as pairs (`data.hex` kept, log lines dropped). */
async function abciCli(address: string, ...args: string[]): Promise<[string, string][]> {
  const out = await new Deno.Command(cli!, { args: ["--address", address, "--log_level", "error", ...args] })
    .output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`abci-cli ${args[0]} failed: ${text}${new TextDecoder().decode(out.stderr)}`);
  }
  return text.split("\n").filter((l) => l.startsWith("-> ")).map((l) => {
    const i = l.indexOf(": ");
    return [l.slice(3, i), l.slice(i + 2)];
  });
}

const hex = (bytes: Uint8Array) => `0x${toHex(bytes)}`;

Deno.test({
  name: "abci-cli drives info, check_tx, finalize_block, commit and query against the ledger's ABCI server",
  ignore: !cli,
  async fn() {
    const app = testApp();
    const served = await serve(app);
    const address = served.server.proxyApp;
    try {
      assertEquals(await abciCli(address, "echo", "hello"), [["code", "OK"], ["data", "hello"], [
        "data.hex",
        "0x68656C6C6F",
      ]]);
      assertEquals((await abciCli(address, "info"))[1], ["data", "neuroshard"]);
      const good = canonicalBytes(tx(alice, "transfer", 0, { to: bob.accountId, amount: 5_000 }));
      assertEquals((await abciCli(address, "check_tx", hex(good)))[0], ["code", "OK"]);
      // A bad transaction is refused with our code number and message; the state does not move.
      const before = [app.info().app_hash, snapshot(app)];
      const stale = canonicalBytes(tx(alice, "transfer", 7, { to: bob.accountId, amount: 1 }));
      const bad = await abciCli(address, "check_tx", hex(stale));
      assertEquals(bad[0], ["code", String(abciCode("future_nonce"))]);
      assertEquals(bad.find(([k]) => k === "log")?.[1], "Cannot apply transaction: nonce is 7, expected 1");
      const garbage = await abciCli(address, "check_tx", "0x7b7d7d");
      assertEquals(garbage[0], ["code", String(abciCode("trailing_data"))]);
      assertEquals([app.info().app_hash, snapshot(app)], before);

      const fin = await abciCli(address, "finalize_block", hex(good));
      assertEquals(fin[0], ["code", "OK"]);
      assertEquals(app.info().height, 0); // applied, not persisted
      const applied = app.pendingResult()!;
      assertEquals(fin[fin.length - 1], ["data.hex", `0x${applied.app_hash.toUpperCase()}`]);
      await abciCli(address, "commit");
      assertEquals([app.info().height, app.info().app_hash], [1, applied.app_hash]);

      const q = await abciCli(address, "query", "--path", `/account/${bob.accountId}`, '""');
      assertEquals(q[0], ["code", "OK"]);
      assertEquals(
        q.find(([k]) => k === "value")?.[1],
        canonical({ id: bob.accountId, balance: 5_000, nonce: 0, height: 1 }),
      );
      const missing = await abciCli(address, "query", "--path", "/nothing", '""');
      assertEquals(missing[0], ["code", String(abciCode("not_found"))]);
      assertEquals(served.logs, []);
    } finally {
      await served.close();
    }
  },
});
