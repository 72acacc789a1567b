/**
 * Helpers for whole-network ledger tests: start `tasks/validator.ts` as real processes on 127.0.0.1, read
 * their logs, read their committed app hashes straight from their SQLite files, and always clean up.
 */
import { DatabaseSync } from "node:sqlite";
import { canonical, type JsonObject } from "../../core/canonical.ts";
import { createConsensusKeyFile } from "../../ledger/consensus_key.ts";
import { terminate } from "../../devnet/supervisor.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A running validator process. */
export interface NodeProc {
  readonly url: string;
  readonly home: string;
  readonly child: Deno.ChildProcess;
  /** Every log line so far. */
  readonly lines: string[];
  /** Resolves with the exit code. */
  readonly exited: Promise<number>;
}

/** Writes `genesis` to `dir/genesis.json` and consensus keys for `seeds` into `dir/v<i>/consensus.key`. */
export async function prepare(dir: string, genesis: JsonObject, seeds: readonly string[]): Promise<string> {
  await Deno.writeTextFile(`${dir}/genesis.json`, canonical(genesis));
  for (const [i, seed] of seeds.entries()) await createConsensusKeyFile(`${dir}/v${i}/consensus.key`, seed);
  return `${dir}/genesis.json`;
}

/** Starts a validator process and waits until it listens. */
export async function startProc(
  home: string,
  genesisPath: string,
  options: {
    follow?: string;
    intervalMs?: number;
    port?: number;
    env?: Record<string, string>;
    engine?: "cometbft";
    args?: readonly string[];
  } = {},
): Promise<NodeProc> {
  const args = ["run", "--allow-all", `${ROOT}tasks/validator.ts`, "--home", home, "--genesis", genesisPath];
  if (options.engine) args.push("--engine", options.engine);
  if (options.follow) args.push("--follow", options.follow);
  if (options.intervalMs) args.push("--interval-ms", String(options.intervalMs));
  if (options.port) args.push("--port", String(options.port));
  if (options.args) args.push(...options.args);
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: options.env ?? {},
  }).spawn();
  const lines: string[] = [];
  let resolveUrl: (url: string) => void = () => {};
  const urlP = new Promise<string>((r) => (resolveUrl = r));
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let buf = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        const m = / listening on (http:\/\/127\.0\.0\.1:\d+) /.exec(line);
        if (m) resolveUrl(m[1]!);
      }
    }
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const exited = child.status.then(async (s) => (await pumps, s.code));
  const url = await Promise.race([
    urlP,
    exited.then((code) => {
      throw new Error(`validator exited with ${code} before listening:\n${lines.join("\n")}`);
    }),
  ]);
  return { url, home, child, lines, exited };
}

/** Stops a process (SIGTERM, then SIGKILL after 5 s) and waits for it. */
export async function stopProc(p: NodeProc): Promise<void> {
  await terminate(p.child, p.exited);
}

/** The committed (height → app hash) of a node's state file. */
export function committedHashes(home: string): Map<number, string> {
  const db = new DatabaseSync(`${home}/state.sqlite`);
  try {
    const rows = db.prepare("SELECT height, app_hash FROM blocks ORDER BY height").all() as {
      height: number;
      app_hash: string;
    }[];
    return new Map(rows.map((r) => [Number(r.height), r.app_hash]));
  } finally {
    db.close();
  }
}

/** GET a JSON answer. */
export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  return JSON.parse(await res.text()) as T;
}

/** Polls `ok` every 25 ms until it holds or `ms` pass. */
export async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A small seeded PRNG (mulberry32) for reproducible workloads. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
