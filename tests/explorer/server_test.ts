import { deepStrictEqual as assertEquals, equal, match } from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { startNode } from "../../ledger/engine/node.ts";
import { RpcSource } from "../../explorer/rpc_source.ts";
import { startExplorer } from "../../explorer/server.ts";
import { StateSource } from "../../explorer/state_source.ts";
import { alice, bob, testGenesis } from "../ledger/_fixture.ts";
import { buildSmallChain, HOSTILE, type SmallChain } from "./_chain.ts";
import { type Held, hold } from "../faults/_sockets.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function get(url: string, init?: RequestInit): Promise<[number, string]> {
  const res = await fetch(url, { redirect: "manual", ...init });
  return [res.status, await res.text()];
}

/** The text of a page's <main>, tags stripped, for comparing what two sources show. */
function mainText(page: string): string {
  const m = /<main>([\s\S]*)<\/main>/.exec(page);
  return (m?.[1] ?? "").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
}

/** Every page a small chain has, and what its text must contain. */
function pages(c: SmallChain): [string, RegExp][] {
  return [
    [
      "/",
      /Transactions 3 .*Money 13,999,000 atoms genesis 14,000,000 atoms issued 0 atoms · burned 1,000 atoms.*Latest blocks/,
    ],
    ["/blocks", /3 blocks committed and indexed/],
    ["/block/1", /transactions 1 /],
    ["/block/2", /unknown_kind .*stale_nonce/],
    [`/tx/${c.transfer}`, /kind transfer .*accepted .*amount 1000/],
    [`/tx/${c.stale}`, /rejected · error code stale_nonce/],
    ["/training", /No claim on this chain yet/],
    ["/disputes", /Nobody has challenged a claim/],
    ["/data", /No data cohort on this chain yet/],
    ["/evaluation", /No evaluation on this chain yet/],
    ["/inference", /No paid inference on this chain yet/],
    ["/accounts", /accounts seen on the chain/],
    [`/account/${bob.accountId}`, /balance 1,000 atoms/],
    [`/account/${alice.accountId}`, /balance 9,998,000 atoms next nonce 1/],
    ["/validators", /2 validators · total power 8/],
  ];
}

/** Malformed ids (400) and unknown ones (404) on every route that takes an id. */
const BAD: [string, number][] = [
  ["/block/0", 400],
  ["/block/-1", 400],
  ["/block/1e3", 400],
  ["/block/99999999999999999", 400],
  ["/block/4", 404],
  ["/tx/XYZ", 400],
  [`/tx/${"A".repeat(64)}`, 400],
  [`/tx/${"0".repeat(64)}`, 404],
  ["/claim/123", 400],
  [`/claim/${"0".repeat(64)}`, 404],
  ["/account/02", 400],
  [`/account/04${"0".repeat(64)}`, 400],
  [`/account/02${"0".repeat(64)}`, 404],
  ["/model/%zz", 400],
  [`/model/${"0".repeat(64)}`, 404],
  ["/id/notanid", 400],
  ["/blocks?before=x", 400],
  ["/accounts?page=-1", 400],
  ["/api/blocks?after=-5", 400],
  ["/nothing", 404],
  ["/block/1/extra", 404],
];

async function checkPages(url: string, c: SmallChain): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const [path, want] of pages(c)) {
    const [status, body] = await get(url + path);
    equal(status, 200, `${path}: ${body.slice(0, 300)}`);
    match(mainText(body), want, path);
    equal(body.includes("<img src=x"), false, `${path} shows unescaped markup`);
    texts.set(path, mainText(body));
  }
  for (const [path, status] of BAD) {
    const [got, body] = await get(url + path);
    equal(got, status, `${path}: ${body.slice(0, 300)}`);
    match(mainText(body), /Cannot show/, path);
  }
  for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
    for (const path of ["/", `/tx/${c.transfer}`, "/api/blocks", "/assets/explorer.js"]) {
      const [status] = await get(url + path, { method, body: method === "DELETE" ? null : "{}" });
      equal(status, 405, `${method} ${path}`);
    }
  }
  return texts;
}

Deno.test("the explorer shows a state file read-only: every page, 400 for malformed and 404 for unknown ids, 405 for writes, markup escaped, bytes and mtime unchanged", async () => {
  const dir = await Deno.makeTempDir({ prefix: "explorer-state-" });
  try {
    const c = buildSmallChain(dir);
    const before = [Deno.readFileSync(c.path), Deno.statSync(c.path).mtime?.getTime()];
    const files = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    const explorer = await startExplorer(StateSource.open(c.path), { port: 0, syncMs: 50 });
    try {
      await checkPages(explorer.url, c);
      const [, block2] = await get(`${explorer.url}/block/2`);
      equal(
        block2.includes("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"),
        true,
        "the kind is shown escaped",
      );
      equal(block2.includes(HOSTILE), false);
      const redirect = await fetch(`${explorer.url}/id/${c.transfer}`, { redirect: "manual" });
      equal(redirect.status, 302);
      equal(redirect.headers.get("location"), `/tx/${c.transfer}`);
      await redirect.body?.cancel();
    } finally {
      await explorer.close();
    }
    assertEquals([Deno.readFileSync(c.path), Deno.statSync(c.path).mtime?.getTime()], before);
    // SQLite's reader of a WAL database may add its empty log and its shared-memory index beside the file;
    // the log stays empty, so nothing was written.
    const after = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assertEquals(
      after.filter((f) => !files.includes(f)).every((f) => /^state\.sqlite-(wal|shm)$/.test(f)),
      true,
    );
    if (after.includes("state.sqlite-wal")) equal(Deno.statSync(`${dir}/state.sqlite-wal`).size, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the explorer's connections are bounded: a declared body is refused on its head, a half-sent head gets 408, idle connections are closed, pages are still served", async () => {
  const dir = await Deno.makeTempDir({ prefix: "explorer-bounds-" });
  const held: Held[] = [];
  try {
    const c = buildSmallChain(dir);
    const explorer = await startExplorer(StateSource.open(c.path), {
      port: 0,
      limits: { headerTimeoutMs: 500, idleTimeoutMs: 1_000, maxConnections: 64 },
    });
    try {
      const port = Number(new URL(explorer.url).port);
      const withBody = await hold(port, "GET /blocks HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n");
      const post = await hold(port, "POST /blocks HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n");
      const half = await hold(port, "GET /blocks HTTP/1.1\r\nhost: x\r\nx-half: ");
      held.push(withBody, post, half);
      match((await withBody.closed).answer, /^HTTP\/1\.1 413 [^]*the explorer's pages take none/);
      match(
        (await post.closed).answer,
        /^HTTP\/1\.1 405 [^]*Cannot POST \/blocks: the explorer is read-only/,
      );
      match((await half.closed).answer, /^HTTP\/1\.1 408 /);
      const idle = await Promise.all(Array.from({ length: 100 }, () => hold(port, "")));
      held.push(...idle);
      // 100 idle connections past a cap of 64: the oldest make room, the rest close at their deadline.
      for (const r of await Promise.all(idle.map((h) => h.closed))) equal(r.answer, "");
      const [status, body] = await get(`${explorer.url}/blocks`);
      equal(status, 200);
      match(mainText(body), /Blocks/);
    } finally {
      await explorer.close();
    }
  } finally {
    for (const h of held) h.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the explorer over a validator's RPC shows the same pages as over its state file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "explorer-rpc-" });
  try {
    const c = buildSmallChain(dir);
    const fromState = await startExplorer(StateSource.open(c.path), { port: 0 });
    const stateTexts = await checkPages(fromState.url, c).finally(() => fromState.close());
    const node = await startNode({ home: dir, genesis: testGenesis(), intervalMs: 3_600_000, log: () => {} });
    const fromRpc = await startExplorer(new RpcSource(node.url), { port: 0 });
    try {
      const rpcTexts = await checkPages(fromRpc.url, c);
      assertEquals(rpcTexts, stateTexts);
    } finally {
      await fromRpc.close();
      await node.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("read-only mode refuses a missing state file and creates nothing; an unreachable RPC is an error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "explorer-missing-" });
  try {
    let err: unknown = null;
    try {
      StateSource.open(`${dir}/state.sqlite`);
    } catch (e) {
      err = e;
    }
    equal(err instanceof ProtocolError && err.code, "not_found");
    assertEquals([...Deno.readDirSync(dir)], []);
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["task", "explorer", "--state", `${dir}/state.sqlite`],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(r.stderr).split("\n").filter((l) => l.startsWith("error"));
    assertEquals([r.code, stderr], [1, [
      `error: Cannot open state: ${dir}/state.sqlite does not exist, expected a validator's state.sqlite (not_found)`,
    ]]);
    assertEquals([...Deno.readDirSync(dir)], []);
    Deno.writeTextFileSync(`${dir}/empty.sqlite`, "");
    let notLedger: unknown = null;
    try {
      StateSource.open(`${dir}/empty.sqlite`);
    } catch (e) {
      notLedger = e;
    }
    equal(notLedger instanceof ProtocolError && notLedger.code, "bad_request");
    equal(Deno.statSync(`${dir}/empty.sqlite`).size, 0);
    const closed = new RpcSource("http://127.0.0.1:9");
    let unreachable: unknown = null;
    await closed.status().catch((e) => (unreachable = e));
    match(String(unreachable), /Cannot reach http:\/\/127\.0\.0\.1:9\/status/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task explorer --help names every option; usage mistakes exit 2", async () => {
  const run = async (args: string[]) => {
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-env", "--allow-net=127.0.0.1", "tasks/explorer.ts", ...args],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
  };
  const help = await run(["--help"]);
  equal(help.code, 0);
  for (const o of ["--rpc URL", "--state FILE", "--port P"]) match(help.out, new RegExp(o));
  for (
    const [args, message] of [
      [[], "error: exactly one of --rpc URL and --state FILE is required"],
      [
        ["--rpc", "http://127.0.0.1:1", "--state", "x"],
        "error: exactly one of --rpc URL and --state FILE is required",
      ],
      [["--rpc", "ftp://x"], "error: --rpc is ftp://x, expected a URL like http://127.0.0.1:26657"],
      [["--state", "x", "--port", "70000"], "error: --port is 70000, expected an integer from 0 to 65535"],
      [["--state", "x", "extra"], "error: unexpected argument extra"],
    ] as const
  ) {
    const r = await run([...args]);
    assertEquals([r.code, r.err.split("\n")[0]], [2, message]);
  }
});
