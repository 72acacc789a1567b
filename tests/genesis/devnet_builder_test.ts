import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { loadManifest } from "../../kernels/manifest.ts";
import { loadCodec } from "../../text/codec.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { genesisId, parseGenesis } from "../../genesis/schema.ts";
import { devnetContents } from "../../genesis/devnet/contents.ts";
import {
  DEVNET_BLOCK_INTERVAL_MS,
  DEVNET_BUILD_PARAMS,
  DEVNET_FUNDING,
  DEVNET_GENESIS_TIME,
  ensureDevnet,
} from "../../genesis/devnet_builder.ts";
import { DEVNET_PARAMS } from "../../workflows/params.ts";
import { sha256Hex } from "../../core/digest.ts";
import { loadSourcesFile } from "../../actors/curator/config.ts";
import { loadReviewPolicy } from "../../actors/curator/auto_review.ts";
import { DEVNET_CURATOR_WINDOWS, devnetSourceFiles } from "../../genesis/devnet/sources.ts";

const contents = devnetContents();

async function mode(path: string): Promise<number> {
  return (await Deno.stat(path)).mode! & 0o777;
}

Deno.test("the devnet build writes a data-lifecycle genesis, funded 0600 keys, the model in every home and each operator's own sources", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const dir = `${tmp}/devnet`;
    const lines: string[] = [];
    const d = await ensureDevnet({ dir, stepsPerCohort: 7 }, (l) => lines.push(l));
    assertEquals(d.built, true);
    const value = parseJson(await Deno.readTextFile(d.genesisPath));
    const g = parseGenesis(value);
    assertEquals(d.genesisId, genesisId(value));
    assertEquals([g.genesis_time, g.params, g.consensus.block_interval_ms], [
      DEVNET_GENESIS_TIME,
      { ...DEVNET_PARAMS, ...DEVNET_BUILD_PARAMS, steps_per_cohort: 7 },
      DEVNET_BLOCK_INTERVAL_MS,
    ]);
    // 8 retention and 8 fresh documents a cohort (the genesis default is 32 of each).
    assertEquals(g.data!.evaluation_documents, 8);
    assertEquals(g.training!.root, contents.model.root);
    assertEquals([g.training!.learning_rate, g.training!.clip], [contents.learningRate, contents.clip]);
    // No genesis batches: the devnet trains on admitted cohorts over its pinned sources.
    assertEquals(g.training!.batches, []);
    const files = devnetSourceFiles();
    assertEquals(g.data!.sources, files.map((f) => f.spec));
    assertEquals(files.map((f) => [f.spec.name, f.spec.role, f.spec.format]), [
      ["devnet-chat", "train", "jsonl"],
      ["devnet-retention", "retention", "parquet"],
      ["devnet-fresh", "fresh", "jsonl"],
    ]);
    assertEquals(g.data!.cursors, { "devnet-chat": 0, "devnet-retention": 0, "devnet-fresh": 0 });
    for (const home of [d.curator, ...d.validators]) {
      const config = await loadSourcesFile(`${home}/sources/sources.json`);
      assertEquals(config.sources.map((s) => s.spec), files.map((f) => f.spec));
      for (const s of config.sources) assertEquals(sha256Hex(await Deno.readFile(s.file)), s.spec.sha256);
    }
    for (const home of d.validators) {
      assertEquals(
        (await loadReviewPolicy(`${home}/review-policy.json`)).config.windows,
        DEVNET_CURATOR_WINDOWS,
      );
    }
    assertEquals(g.codec, { root: contents.codec.root, manifest: contents.codec.manifest as never });
    assertEquals(d.validators.map((v) => v.slice(dir.length)), [
      "/validator-0",
      "/validator-1",
      "/validator-2",
      "/validator-3",
    ]);
    assertEquals(d.workers.map((v) => v.slice(dir.length)), ["/worker-0", "/worker-1", "/worker-2"]);
    const balance = new Map(g.accounts.map((a) => [a.id, a.balance]));
    assertEquals(balance.get(d.accounts.sponsor!), DEVNET_FUNDING.sponsor);
    assertEquals(balance.get(d.accounts.referee!), DEVNET_FUNDING.referee);
    assertEquals(balance.get(d.accounts.evaluator!), DEVNET_FUNDING.evaluator);
    assertEquals(balance.get(d.accounts.curator!), DEVNET_FUNDING.curator);
    for (const w of ["worker-0", "worker-1", "worker-2", "forger"]) {
      assertEquals(balance.get(d.accounts[w]!), DEVNET_FUNDING.worker);
    }
    assertEquals(g.validators.map((v) => v.owner), [0, 1, 2, 3].map((i) => d.accounts[`validator-${i}`]));
    for (const home of [...d.workers, d.forger, d.sponsor, d.referee, d.evaluator, d.curator]) {
      assertEquals([await mode(`${home}/account.key`), await mode(`${home}/token`)], [0o600, 0o600]);
    }
    for (
      const home of [...d.validators, ...d.workers, d.forger, d.sponsor, d.referee, d.evaluator, d.curator]
    ) {
      const store = new ObjectStore(`${home}/objects`);
      for (const root of contents.objects.keys()) assertEquals(await store.has(root), true);
    }
    const shared = new ObjectStore(d.objects);
    assertEquals((await loadManifest(shared, contents.model.root)).manifest, contents.model.manifest);
    assertEquals((await loadCodec(shared, contents.codec.root)).root, contents.codec.root);
    assertEquals(lines.length, 3);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("a second build keeps the devnet that exists; a half-finished build is started over", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const dir = `${tmp}/devnet`;
    await Deno.mkdir(`${dir}.building/worker-0`, { recursive: true });
    await Deno.writeTextFile(`${dir}.building/worker-0/account.key`, "left over by a killed build\n");
    const first = await ensureDevnet({ dir });
    const before = await Deno.readTextFile(first.genesisPath);
    const again = await ensureDevnet({ dir });
    assertEquals([again.built, again.genesisId, again.accounts], [false, first.genesisId, first.accounts]);
    assertEquals(await Deno.readTextFile(first.genesisPath), before);
    assertEquals((await loadKeyFile(`${dir}/worker-0/account.key`)).accountId, first.accounts["worker-0"]);
    let missing = false;
    await Deno.stat(`${dir}.building`).catch(() => (missing = true));
    assertEquals(missing, true);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("the build refuses a directory that exists without a genesis and leaves it untouched", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${tmp}/notes.txt`, "mine\n");
    let code = "";
    try {
      await ensureDevnet({ dir: tmp });
    } catch (e) {
      code = (e as ProtocolError).code;
    }
    assertEquals(code, "key_exists");
    assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name), ["notes.txt"]);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
