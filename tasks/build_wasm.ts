/**
 * `deno task build:wasm`: assembles kernels/wasm/matmul.wat into matmul.wasm and matmul_wasm_bytes.ts
 * (the loader's embedded copy). `--check` only compares and exits 1 when the committed files are stale.
 * @module
 */

import { parseArgs } from "node:util";
import {
  assembleWat,
  bytesModule,
  MATMUL_BYTES_TS_URL,
  MATMUL_WASM_URL,
  MATMUL_WAT_URL,
} from "../kernels/wasm/assemble.ts";

const HELP = `Usage: deno task build:wasm [--check]

Assembles kernels/wasm/matmul.wat (npm:wabt, pinned in deno.json) into
kernels/wasm/matmul.wasm and kernels/wasm/matmul_wasm_bytes.ts.

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
  const wasm = await assembleWat(await Deno.readTextFile(MATMUL_WAT_URL), "matmul.wat");
  const ts = new TextEncoder().encode(bytesModule(wasm, "kernels/wasm/matmul.wat"));
  if (values.check) {
    const stale = [[MATMUL_WASM_URL, wasm], [MATMUL_BYTES_TS_URL, ts]]
      .filter(([url, bytes]) => !sameBytes(readOrEmpty(url as URL), bytes as Uint8Array))
      .map(([url]) => (url as URL).pathname);
    if (stale.length > 0) {
      console.error(
        `Cannot confirm the committed WebAssembly: stale ${stale.join(", ")}; run deno task build:wasm`,
      );
      return 1;
    }
    console.log(`matmul.wasm is up to date (${wasm.length} bytes)`);
    return 0;
  }
  Deno.writeFileSync(MATMUL_WASM_URL, wasm);
  Deno.writeFileSync(MATMUL_BYTES_TS_URL, ts);
  console.log(`wrote ${MATMUL_WASM_URL.pathname} (${wasm.length} bytes) and ${MATMUL_BYTES_TS_URL.pathname}`);
  return 0;
}

Deno.exit(await main());
