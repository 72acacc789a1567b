/**
 * CometBFT homes for our validators (PROTOCOL §14). For each validator home `H` (holding `consensus.key`) it
 * writes `H/cometbft/`:
 *
 * - `config/genesis.json`: our chain id, genesis time, validators (power = bond / `bond_unit`) and
 *   `app_state = {genesis_id}`; block size bound twice our `max_block_bytes`.
 * - `config/priv_validator_key.json` (0600): the same Ed25519 key as `consensus.key`, so CometBFT signs with
 *   the key the ledger knows; `data/priv_validator_state.json` starting at height 0.
 * - `config/node_key.json` (0600): a fresh Ed25519 node key (the peer id is its CometBFT address).
 * - `config/config.toml`: RPC and P2P on 127.0.0.1 at ports that were free when written, every other
 *   validator as a persistent peer, no peer exchange or external address (the validator task passes the
 *   ABCI address as `--proxy_app`), the
 *   transaction indexer off (our store indexes), and consensus timeouts scaled to `block_interval_ms`.
 */
import { Buffer } from "node:buffer";
import { type JsonValue, parseJson } from "../../core/canonical.ts";
import { readSecretFile, writeSecretFile } from "../../core/secret_file.ts";
import { fromHex, toHex } from "../../core/hex.ts";
import { MAX_TX_BYTES } from "../../core/limits.ts";
import { consensusKeyFromSeed, newConsensusSeed } from "../consensus_key.ts";
import { genesisId, parseGenesis } from "../../genesis/schema.ts";
import { cometAppState } from "./application.ts";
import { cometAddress } from "./wire_values.ts";

/** Where a validator's CometBFT home is, given our validator home. */
export function cometHomeOf(home: string): string {
  return `${home.replace(/\/$/, "")}/cometbft`;
}

/** One node as written. */
export interface CometNode {
  readonly home: string;
  readonly nodeId: string;
  readonly p2pPort: number;
  readonly rpcPort: number;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** Ed25519 key JSON as CometBFT stores it (`priv_key.value` is the seed followed by the public key). */
function keyJson(seedHex: string): { address: string; pub: string; priv: string } {
  const key = consensusKeyFromSeed(seedHex);
  const pub = fromHex(key.publicKey);
  return {
    address: cometAddress(key.publicKey),
    pub: b64(pub),
    priv: b64(new Uint8Array([...fromHex(seedHex), ...pub])),
  };
}

/**
 * The first port of the kernel's ephemeral range (where bind to port 0 and outgoing connections take theirs):
 * Linux's configured one when it can be read (Deno asks for full access to read `/proc/sys`, which the tasks do
 * not have), else 32768, Linux's default and below the other systems' defaults (49152).
 */
function ephemeralLow(): number {
  try {
    const low = Number(
      Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range").trim().split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768; // not readable here, or not Linux
  }
}

/**
 * Ports free on 127.0.0.1 right now (each bound once, then released), for CometBFT to bind when it starts.
 * Between now and then another process may take a port; so they are drawn at random below the kernel's
 * ephemeral range (from 10000), where no process's bind to port 0 or outgoing connection lands, and only
 * where that range starts too low are they the OS's choice.
 */
async function freePorts(n: number): Promise<number[]> {
  const low = ephemeralLow(), ports: number[] = [];
  for (let tries = 0; low > 10_000 + 4 * n && ports.length < n && tries < 50 * n; tries++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (ports.includes(port)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      ports.push(port);
    } catch {
      // taken: draw another
    }
  }
  if (ports.length < n) {
    const listeners = Array.from(
      { length: n - ports.length },
      () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
    );
    ports.push(...listeners.map((l) => (l.addr as Deno.NetAddr).port));
    for (const l of listeners) l.close();
  }
  await Promise.resolve();
  return ports;
}

/** The CometBFT genesis document of our genesis. */
export function cometGenesis(genesisValue: JsonValue): JsonValue {
  const g = parseGenesis(genesisValue);
  return {
    genesis_time: new Date(g.genesis_time).toISOString(),
    chain_id: g.chain_id,
    initial_height: "1",
    consensus_params: {
      block: { max_bytes: String(2 * g.consensus.max_block_bytes), max_gas: "-1" },
      evidence: { max_age_num_blocks: "100000", max_age_duration: "172800000000000", max_bytes: "1048576" },
      validator: { pub_key_types: ["ed25519"] },
      version: { app: "1" },
      abci: { vote_extensions_enable_height: "0" },
    },
    validators: g.validators.map((v, i) => ({
      address: cometAddress(v.consensus_key),
      pub_key: { type: "tendermint/PubKeyEd25519", value: b64(fromHex(v.consensus_key)) },
      power: String(v.amount / g.params.bond_unit),
      name: `validator-${i}`,
    })),
    app_hash: "",
    app_state: cometAppState(genesisId(genesisValue)),
  };
}

function configToml(
  moniker: string,
  node: { p2pPort: number; rpcPort: number },
  peers: string,
  intervalMs: number,
): string {
  const ms = (n: number) => `"${Math.max(1, Math.round(n))}ms"`;
  return `# Written by deno task genesis cometbft; CometBFT fills every key not given here with its default.
moniker = "${moniker}"
db_backend = "goleveldb"
log_level = "info"

[rpc]
laddr = "tcp://127.0.0.1:${node.rpcPort}"
cors_allowed_origins = []
# a base64 upload chunk of the largest transaction must fit in one broadcast request
max_body_bytes = ${4 * MAX_TX_BYTES}

[p2p]
laddr = "tcp://127.0.0.1:${node.p2pPort}"
external_address = ""
persistent_peers = "${peers}"
pex = false
addr_book_strict = false
allow_duplicate_ip = true
handshake_timeout = "5s"
dial_timeout = "1s"

[mempool]
size = 5000
max_tx_bytes = ${MAX_TX_BYTES}

[consensus]
timeout_propose = ${ms(Math.max(1000, 2 * intervalMs))}
timeout_propose_delta = ${ms(200)}
timeout_prevote = ${ms(Math.max(500, intervalMs / 2))}
timeout_prevote_delta = ${ms(200)}
timeout_precommit = ${ms(Math.max(500, intervalMs / 2))}
timeout_precommit_delta = ${ms(200)}
timeout_commit = ${ms(intervalMs)}
create_empty_blocks = true

[tx_index]
indexer = "null"

[instrumentation]
prometheus = false
`;
}

/**
 * Writes a CometBFT home under each of `homes` (validator homes with `consensus.key`, in genesis order) for
 * the genesis at `genesisPath`; refuses homes that already have one.
 */
export async function writeCometHomes(genesisPath: string, homes: readonly string[]): Promise<CometNode[]> {
  const genesis = parseJson(await Deno.readTextFile(genesisPath));
  const cometGenesisText = JSON.stringify(cometGenesis(genesis), null, 2) + "\n";
  for (const home of homes) {
    const dir = cometHomeOf(home);
    try {
      await Deno.stat(`${dir}/config/genesis.json`);
      throw new Error(`Cannot write CometBFT home: ${dir}/config/genesis.json already exists`);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const seed = await readSecretFile(`${home}/consensus.key`, "consensus key file");
    const pv = keyJson(seed);
    await writeSecretFile(
      `${dir}/config/priv_validator_key.json`,
      JSON.stringify(
        {
          address: pv.address,
          pub_key: { type: "tendermint/PubKeyEd25519", value: pv.pub },
          priv_key: { type: "tendermint/PrivKeyEd25519", value: pv.priv },
        },
        null,
        2,
      ),
      "CometBFT validator key",
    );
    await writeSecretFile(
      `${dir}/data/priv_validator_state.json`,
      JSON.stringify({ height: "0", round: 0, step: 0 }),
      "CometBFT validator state",
    );
    const nk = keyJson(newConsensusSeed());
    await writeSecretFile(
      `${dir}/config/node_key.json`,
      JSON.stringify({ priv_key: { type: "tendermint/PrivKeyEd25519", value: nk.priv } }),
      "CometBFT node key",
    );
    await Deno.writeTextFile(`${dir}/config/genesis.json`, cometGenesisText);
  }
  return await writeCometConfigs(genesisPath, homes);
}

/**
 * (Re)writes `config.toml` of every CometBFT home under `homes` with ports free on 127.0.0.1 now and every
 * other node as a persistent peer (node ids from their `node_key.json`). The devnet calls this at each start,
 * so a port taken since the last run is never reused.
 */
export async function writeCometConfigs(genesisPath: string, homes: readonly string[]): Promise<CometNode[]> {
  const g = parseGenesis(parseJson(await Deno.readTextFile(genesisPath)));
  const ports = await freePorts(2 * homes.length);
  const nodes: CometNode[] = [];
  for (const [i, home] of homes.entries()) {
    const nk = JSON.parse(
      await readSecretFile(`${cometHomeOf(home)}/config/node_key.json`, "CometBFT node key"),
    );
    const pub = Buffer.from(nk.priv_key.value, "base64").subarray(32);
    const nodeId = cometAddress(toHex(new Uint8Array(pub))).toLowerCase();
    nodes.push({ home, nodeId, p2pPort: ports[2 * i]!, rpcPort: ports[2 * i + 1]! });
  }
  for (const [i, node] of nodes.entries()) {
    const peers = nodes.filter((_, j) => j !== i).map((n) => `${n.nodeId}@127.0.0.1:${n.p2pPort}`).join(",");
    await Deno.writeTextFile(
      `${cometHomeOf(node.home)}/config/config.toml`,
      configToml(`validator-${i}`, node, peers, g.consensus.block_interval_ms),
    );
  }
  return nodes;
}

/** The CometBFT RPC URL a home's config.toml names (`http://127.0.0.1:PORT`). */
export async function cometRpcOf(home: string): Promise<string> {
  const text = await Deno.readTextFile(`${cometHomeOf(home)}/config/config.toml`);
  const section = text.slice(text.indexOf("[rpc]"));
  const m = /laddr\s*=\s*"tcp:\/\/([^"]+)"/.exec(section);
  if (!m) throw new Error(`Cannot find the CometBFT RPC address in ${cometHomeOf(home)}/config/config.toml`);
  return `http://${m[1]}`;
}
