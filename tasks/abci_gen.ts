/**
 * `deno task abci:gen [--check]`: generate the TypeScript types of the ABCI 0.38 protocol into
 * `ledger/abci/gen/` from the protos of the pinned CometBFT module (brought by `go mod download`, with
 * gogoproto's `gogo.proto`), using the pinned npm packages `@bufbuild/buf` and `@bufbuild/protoc-gen-es`.
 * `--check` regenerates into a temporary folder and fails when the committed files differ.
 */
import {
  COMETBFT_MODULE,
  COMETBFT_VERSION,
  findGo,
  GOGOPROTO_MODULE,
  moduleDir,
} from "../ledger/abci/cometbft_pin.ts";
import { parse, runTask } from "./_cli.ts";

const HELP = `deno task abci:gen [--check]

Regenerate ledger/abci/gen/ (the ABCI 0.38 protobuf types, tendermint/abci/types.proto and what it imports)
from ${COMETBFT_MODULE}@${COMETBFT_VERSION} with buf and protoc-gen-es (pinned npm packages). Needs Go to
download the module sources into .cache/go.

Options:
  --check      regenerate into a temporary folder and fail (exit 1) if ledger/abci/gen/ differs
  -h, --help   show this help`;

/** The committed output folder. */
export const GEN_DIR = "ledger/abci/gen";
const BUF = "npm:@bufbuild/buf@1.75.0";
const PROTOC_GEN_ES = "npm:@bufbuild/protoc-gen-es@2.17.0";

async function copyTree(from: string, to: string, keep: (name: string) => boolean): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyTree(`${from}/${e.name}`, `${to}/${e.name}`, keep);
    else if (keep(e.name)) await Deno.writeFile(`${to}/${e.name}`, await Deno.readFile(`${from}/${e.name}`));
  }
}

/** Generates the types into `out` (a fresh folder); returns the relative paths written, sorted. */
export async function generate(root: string, out: string): Promise<string[]> {
  const go = await findGo();
  if (!go) throw new Error("Cannot generate ABCI types: Go was not found (set $GO or put go on PATH)");
  const cache = `${root}/.cache/go`;
  const comet = await moduleDir(go, cache, `${COMETBFT_MODULE}@${COMETBFT_VERSION}`);
  const gogo = await moduleDir(go, cache, GOGOPROTO_MODULE);
  const work = await Deno.makeTempDir({ prefix: "abci-gen-" });
  try {
    const proto = `${work}/proto`;
    for (const pkg of ["abci", "crypto", "types", "version"]) {
      await copyTree(
        `${comet}/proto/tendermint/${pkg}`,
        `${proto}/tendermint/${pkg}`,
        (n) => n.endsWith(".proto"),
      );
    }
    await Deno.mkdir(`${proto}/gogoproto`, { recursive: true });
    await Deno.writeFile(
      `${proto}/gogoproto/gogo.proto`,
      await Deno.readFile(`${gogo}/gogoproto/gogo.proto`),
    );
    await Deno.writeTextFile(`${work}/buf.yaml`, "version: v2\nmodules:\n  - path: proto\n");
    const plugin = JSON.stringify([Deno.execPath(), "run", "--allow-read", "--allow-env", PROTOC_GEN_ES]);
    await Deno.writeTextFile(
      `${work}/buf.gen.yaml`,
      `version: v2\nplugins:\n  - local: ${plugin}\n    out: ${out}\n    opt: [target=ts, import_extension=ts]\n`,
    );
    const run = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        BUF,
        "generate",
        "--path",
        "proto/tendermint/abci/types.proto",
        "--include-imports",
      ],
      cwd: work,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!run.success) {
      throw new Error(
        `Cannot generate ABCI types: buf failed: ${new TextDecoder().decode(run.stderr).trim()}`,
      );
    }
  } finally {
    await Deno.remove(work, { recursive: true });
  }
  const files: string[] = [];
  const walk = async (dir: string, rel: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(`${dir}/${e.name}`, `${rel}${e.name}/`);
      else files.push(`${rel}${e.name}`);
    }
  };
  await walk(out, "");
  return files.sort();
}

async function main(): Promise<void> {
  const { values } = parse(Deno.args, { check: { type: "boolean" }, help: { type: "boolean", short: "h" } });
  if (values.help) return console.log(HELP);
  const root = Deno.cwd();
  const out = await Deno.makeTempDir({ prefix: "abci-gen-out-" });
  try {
    const files = await generate(root, out);
    if (values.check) {
      const stale: string[] = [];
      for (const f of files) {
        let committed = "";
        try {
          committed = await Deno.readTextFile(`${root}/${GEN_DIR}/${f}`);
        } catch {
          // missing counts as stale
        }
        if (committed !== await Deno.readTextFile(`${out}/${f}`)) stale.push(f);
      }
      if (stale.length > 0) {
        throw new Error(
          `Cannot accept ${GEN_DIR}: ${stale.join(", ")} differ from generated; run deno task abci:gen`,
        );
      }
      return console.log(`${GEN_DIR} is current (${files.length} files)`);
    }
    await Deno.remove(`${root}/${GEN_DIR}`, { recursive: true }).catch(() => {});
    await copyTree(out, `${root}/${GEN_DIR}`, () => true);
    console.log(`wrote ${files.length} files to ${GEN_DIR}`);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}

if (import.meta.main) await runTask("abci:gen", main);
