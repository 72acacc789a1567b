import assert from "node:assert/strict";
import { ProtocolError } from "../../../core/errors.ts";
import { loadEpochConfig, parseEpochConfig } from "../../../actors/epoch/config.ts";
import { tempDir } from "../runtime/_temp.ts";

const GOOD = {
  genesis: "net/genesis.json",
  sources: "/srv/curator/sources.json",
  workers: "workers.json",
  collect_rows: 256,
  train_documents: 128,
  attempts: 8,
  epoch_atoms: 50_000,
  daily: { epochs: 2, atoms: 100_000 },
};

function refused(value: unknown, message: string): void {
  assert.throws(
    () => parseEpochConfig(value, "/etc/epoch/epoch.json"),
    (e) =>
      e instanceof ProtocolError && e.code === "invalid_config" &&
      e.message === `Cannot read epoch config /etc/epoch/epoch.json: ${message}`,
  );
}

Deno.test("a config is read with paths relative to its folder and poll_ms defaulting to 300", () => {
  assert.deepEqual(parseEpochConfig(GOOD, "/etc/epoch/epoch.json"), {
    path: "/etc/epoch/epoch.json",
    genesis: "/etc/epoch/net/genesis.json",
    sources: "/srv/curator/sources.json",
    workers: "/etc/epoch/workers.json",
    collect_rows: 256,
    train_documents: 128,
    attempts: 8,
    epoch_atoms: 50_000,
    daily: { epochs: 2, atoms: 100_000 },
    growth: { blocks: 0 },
    poll_ms: 300,
  });
  assert.deepEqual(parseEpochConfig({ ...GOOD, growth: { blocks: 16 } }, "/e.json").growth, { blocks: 16 });
  assert.equal(parseEpochConfig({ ...GOOD, poll_ms: 20 }, "/e.json").poll_ms, 20);
});

Deno.test("a config with an unknown, missing, mistyped or out-of-range field is refused naming it", () => {
  refused([], "expected a JSON object");
  refused(
    { ...GOOD, grow: true },
    "unknown field grow, expected genesis, sources, workers, collect_rows, train_documents, attempts, epoch_atoms, daily, growth, poll_ms",
  );
  refused({ ...GOOD, growth: true }, 'growth is true, expected {"blocks": N}');
  refused(
    { ...GOOD, growth: { blocks: 1, when: 2 } },
    'growth is {"blocks":1,"when":2}, expected {"blocks": N}',
  );
  refused({ ...GOOD, growth: { blocks: 17 } }, "growth.blocks is 17, expected an integer from 1 to 16");
  refused({ ...GOOD, growth: { blocks: 0 } }, "growth.blocks is 0, expected an integer from 1 to 16");
  const { attempts: _a, ...noAttempts } = GOOD;
  refused(noAttempts, "attempts is missing");
  refused({ ...GOOD, collect_rows: 0 }, "collect_rows is 0, expected an integer from 1 to 4096");
  refused({ ...GOOD, collect_rows: 4097 }, "collect_rows is 4097, expected an integer from 1 to 4096");
  refused({ ...GOOD, train_documents: "128" }, 'train_documents is "128", expected an integer from 1 to 128');
  refused({ ...GOOD, attempts: 1025 }, "attempts is 1025, expected an integer from 1 to 1024");
  refused(
    { ...GOOD, epoch_atoms: -1 },
    "epoch_atoms is -1, expected an integer from 0 to 9007199254740991",
  );
  refused({ ...GOOD, daily: { epochs: 1 } }, 'daily is {"epochs":1}, expected {"epochs": N, "atoms": N}');
  refused(
    { ...GOOD, daily: { epochs: 1, atoms: 1, extra: 1 } },
    'daily is {"epochs":1,"atoms":1,"extra":1}, expected {"epochs": N, "atoms": N}',
  );
  refused(
    { ...GOOD, daily: { epochs: 0, atoms: 100_000 } },
    "daily.epochs is 0, expected an integer from 1 to 1440",
  );
  refused(
    { ...GOOD, daily: { epochs: 1, atoms: 49_999 } },
    "daily.atoms is 49999, expected an integer from 50000 to 9007199254740991",
  );
  refused({ ...GOOD, genesis: "" }, 'genesis is "", expected a file path');
  refused({ ...GOOD, workers: 7 }, "workers is 7, expected a file path");
  refused({ ...GOOD, poll_ms: 19 }, "poll_ms is 19, expected an integer from 20 to 60000");
});

Deno.test("a config file that is missing, not JSON or holds a fraction is refused with invalid_config", async () => {
  const dir = tempDir("epoch_config_");
  const check = async (text: string | null, tail: RegExp) => {
    const path = `${dir}/epoch-${crypto.randomUUID()}.json`;
    if (text !== null) await Deno.writeTextFile(path, text);
    await assert.rejects(
      loadEpochConfig(path),
      (e) => e instanceof ProtocolError && e.code === "invalid_config" && tail.test(e.message),
    );
  };
  await check(null, /^Cannot read epoch config .*: no such file$/);
  await check("{", /^Cannot read epoch config .*\.json: /);
  await check(
    JSON.stringify({ ...GOOD, attempts: 1.5 }),
    /1\.5|fraction/,
  );
  const path = `${dir}/ok.json`;
  await Deno.writeTextFile(path, JSON.stringify(GOOD));
  assert.equal((await loadEpochConfig(path)).workers, `${dir}/workers.json`);
});
