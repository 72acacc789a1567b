/**
 * `deno task build:wasm`: assembles kernels/wasm/matmul.wat into matmul.wasm and matmul_wasm_bytes.ts
 * (the loader's embedded copy), kernels/wasm/draft.wat (the drafter's non-consensus int8 kernels) into
 * draft.wasm and draft_wasm_bytes.ts, and kernels/wasm/softmax.wat (attention and the head's cross-entropy)
 * into softmax.wasm and softmax_wasm_bytes.ts. `--check` only compares and exits 1 when the committed files are stale.
 * @module
 */

import { parseArgs } from "node:util";
import { assembleWat, bytesModule, WASM_SOURCES } from "../kernels/wasm/assemble.ts";

const HELP = `Usage: deno task build:wasm [--check]

Assembles kernels/wasm/matmul.wat, draft.wat and softmax.wat (npm:wabt, pinned in deno.json) into
kernels/wasm/{matmul,draft,softmax}.wasm and kernels/wasm/{matmul,draft,softmax}_wasm_bytes.ts.

  --check   do not write; exit 1 if the committed files differ from a fresh assembly
  --help    show this help`;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function readOrEmpty(url: URL): Uint8Array {
  try {
    return Deno.readFileSync(url);
  } catch {
    return new Uint8Array(0);
  }
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: Deno.args,
      options: { check: { type: "boolean" }, help: { type: "boolean" } },
    }));
  } catch (e) {
    console.error(`Cannot parse arguments: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const built: [URL, Uint8Array][] = [];
  for (const src of WASM_SOURCES) {
    const name = src.wat.pathname.split("/").pop()!;
    const wasm = await assembleWat(await Deno.readTextFile(src.wat), name);
    const ts = bytesModule(wasm, `kernels/wasm/${name}`, src.constant);
    built.push([src.wasm, wasm], [src.ts, new TextEncoder().encode(ts)]);
  }
  if (values.check) {
    const stale = built.filter(([url, bytes]) => !sameBytes(readOrEmpty(url), bytes)).map(([url]) =>
      url.pathname
    );
    if (stale.length > 0) {
      console.error(
        `Cannot confirm the committed WebAssembly: stale ${stale.join(", ")}; run deno task build:wasm`,
      );
      return 1;
    }
    console.log(`${WASM_SOURCES.length} WebAssembly modules are up to date`);
    return 0;
  }
  for (const [url, bytes] of built) {
    Deno.writeFileSync(url, bytes);
    console.log(`wrote ${url.pathname} (${bytes.length} bytes)`);
  }
  return 0;
}

Deno.exit(await main());
