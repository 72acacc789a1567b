/**
 * The startup conformance check (PROTOCOL §10.6): what it adds to a role's start. In process, the check
 * beside opening a validator's state on the devnet-shaped test genesis; in a fresh process (as every role
 * pays it, cold JIT and WebAssembly compile included), a process that runs the check beside one that only
 * loads the same modules. Run with `deno bench -A bench/conformance_bench.ts`.
 */
import { assertConformance } from "../kernels/conformance.ts";
import { conformanceVectors } from "../genesis/conformance.ts";
import { LedgerApp } from "../ledger/app.ts";
import { testGenesis } from "../tests/ledger/_fixture.ts";

const pinned = conformanceVectors();
const genesis = testGenesis();

Deno.bench("open a validator's state (in memory)", { group: "in process", baseline: true }, () => {
  LedgerApp.open(":memory:", genesis).close();
});
Deno.bench("the conformance check", { group: "in process" }, () => {
  assertConformance(pinned);
});

const MODULES = [
  new URL("../kernels/conformance.ts", import.meta.url).href,
  new URL("../genesis/conformance.ts", import.meta.url).href,
];
const LOAD = `await import(${JSON.stringify(MODULES[0])}); await import(${JSON.stringify(MODULES[1])});`;
const CHECK = `const k = await import(${JSON.stringify(MODULES[0])}); const g = await import(${
  JSON.stringify(MODULES[1])
}); k.assertConformance(g.conformanceVectors());`;

async function fresh(code: string): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", code],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
}

Deno.bench(
  "a fresh process loading the kernels",
  { group: "fresh process", baseline: true, n: 8 },
  async () => {
    await fresh(LOAD);
  },
);
Deno.bench(
  "a fresh process loading the kernels and checking them",
  { group: "fresh process", n: 8 },
  async () => {
    await fresh(CHECK);
  },
);
