import { assertEquals } from "../../_assert.ts";
import { Buffer } from "node:buffer";
import { parseJson } from "../../../core/canonical.ts";
import { toHex } from "../../../core/hex.ts";
import { loadConsensusKeyFile } from "../../../ledger/consensus_key.ts";
import { cometHomeOf, cometRpcOf, writeCometHomes } from "../../../ledger/abci/comet_home.ts";
import { cometAddress } from "../../../ledger/abci/wire_values.ts";
import { writeDevnetGenesis } from "../../../genesis/ledger_devnet.ts";
import { genesisId } from "../../../genesis/schema.ts";

Deno.test("genesis cometbft homes carry our genesis, our consensus keys, loopback ports and every other peer", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const g = await writeDevnetGenesis({
      out: dir,
      validators: 3,
      blockIntervalMs: 400,
      time: 1_790_000_000_123,
    });
    const nodes = await writeCometHomes(g.genesisPath, g.homes);
    const ours = parseJson(await Deno.readTextFile(g.genesisPath));
    for (const [i, home] of g.homes.entries()) {
      const c = cometHomeOf(home);
      const key = await loadConsensusKeyFile(`${home}/consensus.key`);
      const pv = JSON.parse(await Deno.readTextFile(`${c}/config/priv_validator_key.json`));
      assertEquals(pv.address, cometAddress(key.publicKey));
      assertEquals(toHex(Buffer.from(pv.pub_key.value, "base64")), key.publicKey);
      assertEquals(toHex(Buffer.from(pv.priv_key.value, "base64").subarray(32)), key.publicKey);
      for (
        const f of [
          "config/priv_validator_key.json",
          "config/node_key.json",
          "data/priv_validator_state.json",
        ]
      ) {
        assertEquals((await Deno.stat(`${c}/${f}`)).mode! & 0o777, 0o600, f);
      }
      const cg = JSON.parse(await Deno.readTextFile(`${c}/config/genesis.json`));
      assertEquals([cg.chain_id, cg.genesis_time, cg.initial_height], [
        "neuroshard-devnet",
        "2026-09-21T14:13:20.123Z",
        "1",
      ]);
      assertEquals(cg.app_state, { genesis_id: genesisId(ours) });
      assertEquals(cg.validators.map((v: { power: string }) => v.power), ["4", "4", "4"]);
      const toml = await Deno.readTextFile(`${c}/config/config.toml`);
      const peers = /persistent_peers = "([^"]*)"/.exec(toml)![1]!.split(",");
      assertEquals(
        peers.sort(),
        nodes.filter((_, j) => j !== i).map((n) => `${n.nodeId}@127.0.0.1:${n.p2pPort}`).sort(),
      );
      assertEquals(toml.includes(`laddr = "tcp://127.0.0.1:${nodes[i]!.p2pPort}"`), true);
      assertEquals(toml.includes('external_address = ""') && toml.includes("pex = false"), true);
      assertEquals(toml.includes('timeout_commit = "400ms"'), true);
      assertEquals(await cometRpcOf(home), `http://127.0.0.1:${nodes[i]!.rpcPort}`);
    }
    const ports = nodes.flatMap((n) => [n.p2pPort, n.rpcPort]);
    assertEquals(new Set(ports).size, 6);
    // below the kernel's ephemeral range, where no port-0 bind or outgoing connection can take them first
    // (Linux's configured range where this test may read it, else the default that the writer assumes)
    const low = await Deno.readTextFile("/proc/sys/net/ipv4/ip_local_port_range").then(
      (t) => Number(t.trim().split(/\s+/)[0]),
      () => 32_768,
    );
    assertEquals(ports.filter((p) => p < 10_000 || p >= low), []);
    // A second run over the same homes is refused rather than overwriting keys.
    const again = await writeCometHomes(g.genesisPath, g.homes).then(
      () => "written",
      (e) => (e as Error).message,
    );
    assertEquals(
      again,
      `Cannot write CometBFT home: ${cometHomeOf(g.homes[0]!)}/config/genesis.json already exists`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("validator --engine refuses an unknown engine and embedded-only options with exit 2", async () => {
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("../../../tasks/validator.ts", import.meta.url).pathname, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return [out.code, new TextDecoder().decode(out.stderr).split("\n")[0]];
  };
  assertEquals(await run("--engine", "tendermint", "--home", "x", "--genesis", "y"), [
    2,
    "error: --engine is tendermint, expected embedded or cometbft",
  ]);
  assertEquals(await run("--engine", "cometbft", "--home", "x", "--genesis", "y", "--follow", "http://a"), [
    2,
    "error: --follow and --interval-ms belong to the embedded engine, not to --engine cometbft",
  ]);
});
