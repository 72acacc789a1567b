/**
 * The pinned CometBFT release and where its Go tools live on this machine. Everything that needs Go (the
 * install task, the generated ABCI types, the conformance and network tests) goes through these helpers, so a
 * missing Go toolchain gives the same clear message everywhere.
 */

/** The CometBFT release the ABCI adapter speaks to (ABCI 2.0 of the 0.38 line). */
export const COMETBFT_VERSION = "v0.38.26";
/** The Go module of CometBFT. */
export const COMETBFT_MODULE = "github.com/cometbft/cometbft";
/** The gogoproto module whose `gogo.proto` the ABCI protos import (the version CometBFT's go.mod names). */
export const GOGOPROTO_MODULE = "github.com/cosmos/gogoproto@v1.7.0";

/** The Go tool: `$GO` when set (and only it), else `go` on PATH, else `/usr/local/go/bin/go`; null when none runs. */
export async function findGo(): Promise<string | null> {
  const env = Deno.env.get("GO");
  const candidates = env ? [env] : ["go", "/usr/local/go/bin/go"];
  for (const go of candidates) {
    try {
      const out = await new Deno.Command(go, { args: ["version"], stdout: "null", stderr: "null" }).output();
      if (out.success) return go;
    } catch {
      // not this one
    }
  }
  return null;
}

/** The environment for `go` commands that keeps modules and builds under `cache` (e.g. `.cache/go`). */
export function goEnv(cache: string): Record<string, string> {
  return {
    GOPATH: cache,
    GOMODCACHE: `${cache}/pkg/mod`,
    GOCACHE: `${cache}/build`,
    GOFLAGS: "-mod=mod",
  };
}

/** Where `deno task cometbft:install` puts the binaries, relative to the repository root. */
export const BIN_DIR = ".cache/bin";

/** The path of an installed tool (`cometbft` or `abci-cli`) under `root`, or null when it is not installed. */
export async function installedTool(root: string, name: "cometbft" | "abci-cli"): Promise<string | null> {
  const env = name === "cometbft" ? Deno.env.get("NEURO_COMETBFT") : undefined;
  const path = env ?? `${root}/${BIN_DIR}/${name}`;
  try {
    const info = await Deno.stat(path);
    return info.isFile ? path : null;
  } catch {
    return null;
  }
}

/** Runs `go mod download -json module@version` and returns the module's source directory. */
export async function moduleDir(go: string, cache: string, moduleAtVersion: string): Promise<string> {
  await Deno.mkdir(cache, { recursive: true });
  const out = await new Deno.Command(go, {
    args: ["mod", "download", "-json", moduleAtVersion],
    env: goEnv(cache),
    cwd: cache,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `Cannot download ${moduleAtVersion}: go mod download failed: ${
        (text + new TextDecoder().decode(out.stderr)).trim().slice(0, 400)
      }`,
    );
  }
  const dir = (JSON.parse(text) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`Cannot download ${moduleAtVersion}: go mod download gave no directory`);
  return dir;
}
