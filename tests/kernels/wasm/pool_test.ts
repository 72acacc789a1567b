import assert from "node:assert/strict";
import { KernelPool } from "../../../kernels/wasm/pool.ts";
import { matmulWasmBytes } from "../../../kernels/wasm/matmul_wasm.ts";

// A job that computes nothing: the matmul kernel on M = K = N = 0 and the empty column range [0, 0).
const NOTHING = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

Deno.test("a pool call on 2 threads starts one worker only, even while that worker is still starting", async () => {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 16, shared: true });
  const pool = new KernelPool(
    [[new WebAssembly.Module(matmulWasmBytes() as Uint8Array<ArrayBuffer>), "matmul"]],
    memory,
    3,
  );
  let here = 0;
  const local = () => void here++;
  assert.equal(pool.workers(), 0);
  pool.run([NOTHING, NOTHING], local); // the worker is starting: both jobs run here
  assert.equal(pool.workers(), 1);
  assert.equal(here, 2);
  assert.equal(await pool.whenReady(1), 1);
  for (let i = 0; i < 20; i++) pool.run([NOTHING, NOTHING], local);
  assert.equal(pool.workers(), 1);
  assert.ok(here >= 22 && here < 42, `ran ${here} jobs here`); // the worker took some of the second jobs
  pool.run([NOTHING, NOTHING, NOTHING], local); // 3 threads: a second worker is started now
  assert.equal(pool.workers(), 2);
});
