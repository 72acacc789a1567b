/** The committed ABCI types are what `deno task abci:gen` generates; installing CometBFT without Go is refused. */
import { assertEquals } from "../_assert.ts";
import { findGo } from "../../ledger/abci/cometbft_pin.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const go = await findGo();
if (!go) console.log("abci:gen --check ignored: Go was not found");

async function task(file: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "--allow-env", "--allow-run", `tasks/${file}`, ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test({
  name: "ledger/abci/gen is exactly what abci:gen generates from the pinned CometBFT protos",
  ignore: !go,
  async fn() {
    const r = await task("abci_gen.ts", ["--check"]);
    assertEquals([r.code, r.stdout.trim()], [0, "ledger/abci/gen is current (6 files)"], r.stderr);
  },
});

Deno.test("cometbft:install refuses with one clear line when Go is missing", async () => {
  const r = await task("cometbft_install.ts", ["--force"], { GO: "/nonexistent/go" });
  assertEquals(r.code, 1);
  assertEquals(
    r.stderr.trim(),
    "error: Cannot install CometBFT: Go was not found (install Go 1.22 or newer, or set $GO); the cometbft engine and its tests need it",
  );
});

Deno.test("abci:gen and cometbft:install answer --help and refuse unknown options with exit 2", async () => {
  for (const file of ["abci_gen.ts", "cometbft_install.ts"]) {
    assertEquals((await task(file, ["--help"])).code, 0);
    const bad = await task(file, ["--nope"]);
    assertEquals(bad.code, 2, bad.stderr);
  }
});
