/**
 * `deno task cometbft:install`: install the pinned CometBFT (`cometbft` and `abci-cli`) with `go install`
 * into `.cache/bin`, keeping Go's module and build caches under `.cache/go`. Installed binaries of the pinned
 * version are reused. Without Go it refuses with a clear message (exit 1).
 */
import { BIN_DIR, COMETBFT_MODULE, COMETBFT_VERSION, findGo, goEnv } from "../ledger/abci/cometbft_pin.ts";
import { parse, runTask } from "./_cli.ts";

const HELP = `deno task cometbft:install [--force]

Install CometBFT ${COMETBFT_VERSION} (the cometbft node and abci-cli) from the Go module proxy with
go install into ${BIN_DIR}/ (git-ignored); Go's caches go to .cache/go. Needs Go (go on PATH, $GO, or
/usr/local/go/bin/go). Binaries that already report ${COMETBFT_VERSION} are kept unless --force.

Options:
  --force      reinstall even when the pinned version is installed
  -h, --help   show this help`;

async function installedVersion(path: string): Promise<string | null> {
  try {
    const out = await new Deno.Command(path, { args: ["version"], stdout: "piped", stderr: "null" }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const { values } = parse(Deno.args, { force: { type: "boolean" }, help: { type: "boolean", short: "h" } });
  if (values.help) return console.log(HELP);
  const root = Deno.cwd();
  const bin = `${root}/${BIN_DIR}`;
  const have = await installedVersion(`${bin}/cometbft`);
  const cli = await Deno.stat(`${bin}/abci-cli`).then(() => true, () => false);
  if (!values.force && have === COMETBFT_VERSION.slice(1) && cli) {
    return console.log(`cometbft ${have} already installed in ${BIN_DIR}`);
  }
  const go = await findGo();
  if (!go) {
    throw new Error(
      `Cannot install CometBFT: Go was not found (install Go 1.22 or newer, or set $GO); the cometbft engine and its tests need it`,
    );
  }
  await Deno.mkdir(bin, { recursive: true });
  console.error(`installing ${COMETBFT_MODULE} ${COMETBFT_VERSION} with ${go} (about a minute)`);
  const out = await new Deno.Command(go, {
    args: [
      "install",
      `${COMETBFT_MODULE}/cmd/cometbft@${COMETBFT_VERSION}`,
      `${COMETBFT_MODULE}/abci/cmd/abci-cli@${COMETBFT_VERSION}`,
    ],
    env: { ...goEnv(`${root}/.cache/go`), GOBIN: bin },
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`Cannot install CometBFT: go install exited with ${out.code}`);
  console.log(`cometbft ${await installedVersion(`${bin}/cometbft`)} installed in ${BIN_DIR}`);
}

if (import.meta.main) await runTask("cometbft:install", main);
