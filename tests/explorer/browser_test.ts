/**
 * The explorer in a real browser: `deno task devnet --explorer` runs a short scenario (1 honest step, the forged
 * step the referee gets rejected with the slash, 2 more honest steps) with the explorer beside it, keeps serving
 * validator-0's final state read-only after the summary, and headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core) loads every page; Ctrl-C (SIGINT) then ends the devnet with exit 0 and nothing left running. The rendered text must
 * show the block count, each claim's loss, the rejected claim's reason and the dispute's byte count, and the
 * loss chart must hold one point per settled step. Screenshots are saved and their paths printed. Without a
 * Chromium the test is reported as ignored with the reason, never as passed.
 */
import { deepStrictEqual as assertEquals, equal, match } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import type { DevnetSummary } from "../../devnet/summary.ts";
import { killLeftovers, liveChildren, shortDevnetArgs } from "../e2e/_devnet.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

const CANDIDATES = [Deno.env.get("CHROMIUM_PATH") ?? "", "/usr/bin/chromium", "/usr/bin/chromium-browser"];
const chromium = CANDIDATES.find((p) => {
  try {
    return p !== "" && Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});
if (!chromium) {
  console.log(
    "explorer browser test ignored: no Chromium at CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser (apt-get install -y chromium)",
  );
}

/** The bytes the ledger recorded as uploaded for the challenge on `claimId`, read from the state file itself. */
function uploadedBytes(statePath: string, claimId: string): number {
  const db = new DatabaseSync(statePath, { readOnly: true });
  try {
    const rows = db.prepare("SELECT value FROM state WHERE tbl = 'training_job'").all() as {
      value: string;
    }[];
    for (const r of rows) {
      const job = JSON.parse(r.value);
      if (job.claim_id !== claimId) continue;
      return (job.state.claim.challenge.uploads as { bytes: number }[]).reduce((n, u) => n + u.bytes, 0);
    }
    throw new Error(`no job for claim ${claimId}`);
  } finally {
    db.close();
  }
}

/** How many blocks the state file holds, counted by SQLite itself. */
function blockCount(statePath: string): number {
  const db = new DatabaseSync(statePath, { readOnly: true });
  try {
    return Number((db.prepare("SELECT count(*) AS n FROM blocks").get() as { n: number }).n);
  } finally {
    db.close();
  }
}

/**
 * Starts `tasks/devnet.ts --explorer --json` and waits until the scenario's summary is on stdout and the devnet
 * says its explorer keeps serving; resolves with the summary, the explorer's URL and the running process.
 */
async function devnetWithExplorer(dir: string): Promise<{
  child: Deno.ChildProcess;
  summary: DevnetSummary;
  url: string;
  stderr: string[];
}> {
  const child = new Deno.Command(Deno.execPath(), {
    args: shortDevnetArgs(dir, "--json", "--explorer"),
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr: string[] = [];
  const stdout = new Response(child.stdout).body!.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const summary = (async () => {
    for (;;) {
      const { value, done } = await stdout.read();
      if (done) throw new Error(`the devnet ended without a summary:\n${stderr.slice(-30).join("\n")}`);
      out += value;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line && out.includes("\n")) return JSON.parse(line) as DevnetSummary;
    }
  })();
  summary.catch(() => {}); // awaited below; a devnet that fails is reported there, not as an uncaught error
  let buf = "";
  let url: string | null = null;
  const timeout = setTimeout(() => child.kill("SIGKILL"), 900_000);
  for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    const lines = buf.split("\n");
    buf = lines.pop()!;
    stderr.push(...lines);
    const serving = lines.map((l) => /^the explorer keeps serving (http:\/\/127\.0\.0\.1:\d+) /.exec(l)).find(
      (m) => m,
    );
    if (serving) {
      url = serving[1]!;
      break;
    }
  }
  clearTimeout(timeout);
  if (url === null) await summary; // throws the devnet's failure with its last lines
  if (url === null) throw new Error(`the devnet never served its explorer:\n${stderr.slice(-30).join("\n")}`);
  return { child, summary: await summary, url, stderr };
}

async function visit(page: Page, url: string, shots: string, name: string): Promise<string> {
  const res = await page.goto(url, { waitUntil: "networkidle0" });
  equal(res?.status(), 200, url);
  const path = `${shots}/${name}.png`;
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot ${path}`);
  return await page.$eval("main", (m) => (m as unknown as { innerText: string }).innerText);
}

Deno.test({
  name:
    "the explorer shows a devnet's blocks, claims with their losses, the rejected claim's reason, the dispute's bytes and a loss chart with one point per settled step in Chromium",
  ignore: !chromium,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "explorer-browser-" });
    const shots = `${tmp}/screenshots`;
    await Deno.mkdir(shots);
    const dir = `${tmp}/devnet`;
    let browser: Browser | null = null;
    let child: Deno.ChildProcess | null = null;
    try {
      const run = await devnetWithExplorer(dir);
      child = run.child;
      const s = run.summary;
      // Every training claim of the run, in chain order, as the explorer lists them.
      const claims = s.epochs.flatMap((e) => e.steps).map((c) => ({ ...c, status: c.outcome }));
      const settled = claims.filter((c) => c.status === "settled").length;
      const base = run.url;
      match(run.stderr.join("\n"), new RegExp(`^explorer on ${base}$`, "m"));
      const statePath = `${dir}/validator-0/state.sqlite`;
      const before = [Deno.readFileSync(statePath), Deno.statSync(statePath).mtime?.getTime()];
      browser = await puppeteer.launch({
        executablePath: chromium!,
        args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
      });
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 900 });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));

      const count = blockCount(statePath);
      equal(count >= s.height, true);
      const home = await visit(page, `${base}/`, shots, "chain");
      match(home, new RegExp(`Height\\s+${count}\\b`, "i"));
      const blocks = await visit(page, `${base}/blocks`, shots, "blocks");
      match(blocks, new RegExp(`${count} blocks committed and indexed`));

      const training = await visit(page, `${base}/training`, shots, "training");
      const rows = await page.$$eval(
        "tr.claim-row",
        (trs) => trs.map((tr) => (tr as unknown as { innerText: string }).innerText),
      );
      equal(rows.length, claims.length);
      claims.forEach((c, i) => {
        match(rows[i]!, new RegExp(`\\b${c.loss!.toFixed(4)}\\b`), `claim ${i + 1}`);
        match(rows[i]!, new RegExp(c.status));
      });
      const rejected = claims.find((c) => c.status === "rejected")!;
      match(rows[claims.indexOf(rejected)]!, /mismatch: optimizer update/);
      match(training, new RegExp(`${settled} settled · 1 rejected`));
      const chart = await page.evaluate(() => {
        const c = (globalThis as unknown as { lossChart?: { data: number[][] } }).lossChart;
        return c ? { x: c.data[0] ?? [], y: c.data[1] ?? [] } : null;
      });
      equal(chart?.x.length, settled);
      assertEquals(
        chart.y.map((v) => v.toFixed(4)),
        claims.filter((c) => c.status === "settled").map((c) => c.loss!.toFixed(4)),
      );
      equal((await page.$$("#loss-chart canvas")).length, 1);

      const disputes = await visit(page, `${base}/disputes`, shots, "disputes");
      const bytes = uploadedBytes(statePath, rejected.claim_id);
      const shown = await page.$$eval("td.bytes", (tds) => tds.map((td) => td.getAttribute("data-bytes")));
      assertEquals(shown, [String(bytes)]);
      match(disputes, new RegExp(`${bytes.toLocaleString("en-US")} bytes uploaded in 3 chunks`));
      match(disputes, /fraud\s+1\b/);
      match(disputes, /mismatch: optimizer update/);

      const claim = await visit(page, `${base}/claim/${rejected.claim_id}`, shots, "claim");
      match(claim, /rejected — mismatch: optimizer update/);
      const claimTx = await page.$eval("main table.facts a[href^='/tx/']", (a) => a.getAttribute("href"));
      for (
        const [name, path, want] of [
          ["validators", "/validators", /4 validators · total power/],
          ["accounts", "/accounts", /accounts seen on the chain/],
          ["data", "/data", /No data cohort on this chain yet|Transactions \(propose_data, vote_data\)/],
          ["evaluation", "/evaluation", /No evaluation on this chain yet|Evaluation [0-9a-f]{12}…/],
          ["inference", "/inference", /No paid inference on this chain yet|\d+ jobs/],
        ] as const
      ) {
        match(await visit(page, `${base}${path}`, shots, name), want);
      }
      const tx = await visit(page, `${base}${claimTx}`, shots, "tx");
      match(tx, /kind\s+claim/);
      match(tx, /Decoded body/);
      assertEquals(errors, []);
      await browser.close();
      browser = null;

      child.kill("SIGINT");
      equal((await child.status).code, 0);
      child = null;
      equal(await liveChildren(dir), 0);
      assertEquals([Deno.readFileSync(statePath), Deno.statSync(statePath).mtime?.getTime()], before);
    } finally {
      await browser?.close();
      if (child) {
        child.kill("SIGKILL");
        await child.status;
      }
      await killLeftovers(dir);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      console.log(`screenshots kept in ${shots}`);
    }
  },
});
