import assert from "node:assert/strict";
import { sha256Hex } from "../../core/digest.ts";
import { matmul, type MatmulLayout, matmulReference } from "../../kernels/matmul.ts";
import {
  BROADCAST_A_MAX_BYTES,
  matmulWasmBytes,
  wasmMatmul,
  wasmMatmulAvailable,
  wasmMatmulFits,
  wasmMatmulMemoryBytes,
  wasmMatmulThreadsReady,
} from "../../kernels/wasm/matmul_wasm.ts";
import {
  assembleWat,
  bytesModule,
  MATMUL_BYTES_TS_URL,
  MATMUL_WASM_URL,
  MATMUL_WAT_URL,
  WASM_SOURCES,
} from "../../kernels/wasm/assemble.ts";
import {
  adversarial,
  assertThreadsMatchReference,
  describeDifference,
  firstBitDifference,
  LAYOUTS,
  rng,
  seeds,
  uniform,
} from "./_matmul_util.ts";

Deno.test("the committed matmul.wasm and its embedded copy equal a fresh assembly of matmul.wat", async () => {
  const fresh = await assembleWat(await Deno.readTextFile(MATMUL_WAT_URL), "matmul.wat");
  assert.deepEqual(Deno.readFileSync(MATMUL_WASM_URL), fresh);
  assert.deepEqual(matmulWasmBytes(), fresh);
  assert.equal(await Deno.readTextFile(MATMUL_BYTES_TS_URL), bytesModule(fresh, "kernels/wasm/matmul.wat"));
  for (const src of WASM_SOURCES) {
    const name = src.wat.pathname.split("/").pop()!;
    const bytes = await assembleWat(await Deno.readTextFile(src.wat), name);
    assert.deepEqual(Deno.readFileSync(src.wasm), bytes, name);
    assert.equal(
      await Deno.readTextFile(src.ts),
      bytesModule(bytes, `kernels/wasm/${name}`, src.constant),
      name,
    );
  }
});

Deno.test("matmul.wat uses f32x4 mul and add only: no fused multiply-add, no relaxed SIMD", async () => {
  const text = await Deno.readTextFile(MATMUL_WAT_URL);
  const code = text.split("\n").map((l) => l.replace(/;;.*$/, "")).join("\n");
  // besides mul and add, only the conversion of code panels' 8-bit codes (0…255: exact in float32)
  assert.deepEqual(
    code.match(/relaxed|madd|nmadd|fma|f32x4\.(?!add|mul|splat|convert_i32x4_s)[a-z_0-9]+/g),
    null,
  );
  assert.deepEqual(
    [
      ...new Set(
        code.match(/f32x4\.convert_i32x4_s \(i32x4\.extend_(low|high)_i16x8_u \(local\.get \$h\)\)/g),
      ),
    ].sort(),
    [
      "f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))",
      "f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))",
    ],
  );
  assert.equal(
    code.match(/f32x4\.convert_i32x4_s/g)?.length,
    code.match(/f32x4\.convert_i32x4_s \(i32x4\.extend_(low|high)_i16x8_u \(local\.get \$h\)\)/g)?.length,
    "every conversion is of a code widened from one byte",
  );
  assert.equal(
    code.match(/\(local\.set \$h \(i16x8\.extend_(low|high)_i8x16_u \(local\.get \$q\)\)\)/g)?.length,
    code.match(/\(local\.set \$h /g)?.length,
    "$h only ever holds bytes widened to 16 bits",
  );
  assert.ok(code.includes("f32x4.mul") && code.includes("f32x4.add"));
  await assert.rejects(
    assembleWat(
      "(module (func (param v128 v128 v128) (result v128) (f32x4.relaxed_madd (local.get 0) (local.get 1) (local.get 2))))",
      "r.wat",
    ),
  );
});

Deno.test("the WebAssembly SIMD matmul instantiates in this runtime", () => {
  assert.equal(wasmMatmulAvailable(), true);
  assert.equal(wasmMatmulFits(256, 576, 49152), true);
  assert.equal(wasmMatmulFits(65536, 65536, 1), false); // 16 GiB of A alone
});

function inputs(a: Float32Array, b: Float32Array, M: number, K: number, N: number) {
  return { a, b, M, K, N };
}

function checkParity(label: string, x: ReturnType<typeof inputs>, layout: MatmulLayout) {
  const { a, b, M, K, N } = x;
  const want = new Float32Array(M * N).fill(123), got = new Float32Array(M * N).fill(-456);
  matmulReference(a, b, want, M, K, N, layout);
  wasmMatmul(a, b, got, M, K, N, layout);
  const i = firstBitDifference(got, want);
  assert.equal(
    i,
    -1,
    `${label} ${layout} ${M}x${K}x${N}: first difference at ${describeDifference(got, want, i)}`,
  );
}

const EDGE_SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 0, 1],
  [3, 0, 13],
  [2, 1, 12],
  [4, 10, 96],
  [5, 9, 97],
  [7, 13, 200],
  [2, 3, 291],
  [3, 8, 12],
  [6, 16, 24],
  [4, 15, 13],
  [1, 7, 1],
  [1, 33, 25],
  [5, 3, 11],
  [13, 17, 13],
  [2, 5, 24],
  [4, 9, 16],
  [7, 64, 37],
  [31, 2, 29],
];

Deno.test("WebAssembly matmul is bit-identical to the reference on edge shapes in every layout", () => {
  for (const seed of seeds([11])) {
    const next = rng(seed);
    for (const [M, K, N] of EDGE_SHAPES) {
      for (const layout of LAYOUTS) {
        checkParity(
          `seed ${seed} uniform`,
          inputs(uniform(next, M * K), uniform(next, K * N), M, K, N),
          layout,
        );
      }
    }
  }
});

Deno.test("WebAssembly matmul sums of only -0 and +0 products are +0, as in the reference", () => {
  const next = rng(12);
  const zeros = new Float32Array(6 * 7).map((_, i) => (i % 3 === 0 ? 0 : -0));
  for (const layout of LAYOUTS) {
    checkParity("seed 12 signed zeros", inputs(zeros, uniform(next, 7 * 13), 6, 7, 13), layout);
    const c = new Float32Array(6 * 13).fill(-1);
    wasmMatmul(zeros, uniform(next, 7 * 13), c, 6, 7, 13, layout);
    assert.ok(c.every((v) => Object.is(v, 0)), layout);
  }
});

Deno.test("WebAssembly matmul is bit-identical to the reference on random shapes in every layout", () => {
  for (const seed of seeds([21, 22, 23, 24])) {
    const next = rng(seed);
    for (let t = 0; t < 10; t++) {
      const M = 1 + (next() % 40), K = next() % 70, N = 1 + (next() % 50);
      const layout = LAYOUTS[next() % 4]!;
      checkParity(
        `seed ${seed} uniform`,
        inputs(uniform(next, M * K), uniform(next, K * N), M, K, N),
        layout,
      );
    }
  }
});

Deno.test("WebAssembly matmul is bit-identical to the reference on adversarial values (zeros, subnormals, overflow, cancellation)", () => {
  for (const seed of seeds([31, 32, 33])) {
    const next = rng(seed);
    for (let t = 0; t < 12; t++) {
      const M = 1 + (next() % 20), K = next() % 60, N = 1 + (next() % 30);
      const layout = LAYOUTS[t % 4]!;
      checkParity(
        `seed ${seed} adversarial`,
        inputs(adversarial(next, M * K), adversarial(next, K * N), M, K, N),
        layout,
      );
    }
  }
});

Deno.test("WebAssembly matmul is bit-identical to the reference for a large K and for subnormal-only sums", () => {
  const next = rng(41);
  for (const layout of LAYOUTS) {
    checkParity(
      "seed 41 large K",
      inputs(uniform(next, 3 * 5003), uniform(next, 5003 * 14), 3, 5003, 14),
      layout,
    );
  }
  const tiny = new Float32Array(2 * 40).fill(2 ** -70); // products 2^-140: subnormal, summed exactly
  const scaled = (n: number) => uniform(next, n).map((v) => v * 2 ** -70); // products round to subnormals
  for (const layout of LAYOUTS) {
    checkParity("seed 41 subnormal", inputs(scaled(9 * 50), scaled(50 * 27), 9, 50, 27), layout);
  }
  const c = new Float32Array(4);
  wasmMatmul(tiny, tiny, c, 2, 40, 2, "nn");
  assert.deepEqual([...c], [40 * 2 ** -140, 40 * 2 ** -140, 40 * 2 ** -140, 40 * 2 ** -140]);
});

Deno.test("WebAssembly matmul reuses its memory: a smaller call after a larger one needs no growth and stays exact", () => {
  const next = rng(51);
  const big = inputs(uniform(next, 64 * 200), uniform(next, 200 * 90), 64, 200, 90);
  checkParity("seed 51 big", big, "nt");
  const small = inputs(uniform(next, 5 * 7), uniform(next, 7 * 9), 5, 7, 9);
  const grown = wasmMatmulMemoryBytes();
  checkParity("seed 51 small", small, "tn");
  checkParity("seed 51 big again", big, "nn");
  assert.equal(wasmMatmulMemoryBytes(), grown);
});

Deno.test("matmul on a shape large enough for the fast path equals the reference bit for bit", () => {
  const next = rng(61);
  const [M, K, N] = [48, 96, 130];
  const a = uniform(next, M * K), b = uniform(next, K * N);
  for (const layout of LAYOUTS) {
    const want = new Float32Array(M * N), got = new Float32Array(M * N);
    matmulReference(a, b, want, M, K, N, layout);
    matmul(a, b, got, M, K, N, layout);
    const i = firstBitDifference(got, want);
    assert.equal(i, -1, `seed 61 ${layout}: ${describeDifference(got, want, i)}`);
  }
});

Deno.test("matmul across k blocks, with A packed broadcast or compact, is the reference's bits on 1, 2 and 3 threads", async () => {
  await wasmMatmulThreadsReady(3); // threads not ready yet run their share here: the same bits either way
  const next = rng(91);
  // K just below, at and above the 256-step block, two blocks and a short third; ragged M and N (a last row
  // group of one row and of two, as M = 64 and 65 have); and two A above BROADCAST_A_MAX_BYTES once packed
  // broadcast (301 and 302 rows × about 1000: the compact packing, with a last row group of one and of two rows).
  const shapes: [number, number, number][] = [
    [4, 255, 97],
    [2, 256, 13],
    [65, 257, 200],
    [3, 512, 24],
    [7, 513, 130],
    [64, 1537, 37],
    [301, 1000, 13],
    [302, 999, 14],
  ];
  assert.ok(16 * 301 * 999 > BROADCAST_A_MAX_BYTES && 16 * 66 * 1537 <= BROADCAST_A_MAX_BYTES);
  for (const [M, K, N] of shapes) {
    assertThreadsMatchReference("k blocks", adversarial(next, M * K), adversarial(next, K * N), M, K, N);
  }
});

/** A Node.js script that runs the committed matmul.wasm on seeded inputs and prints the SHA-256 of C's bytes. */
const NODE_SCRIPT = `
const fs = require("node:fs"), crypto = require("node:crypto");
const [wasmPath, seed, M, K, N, aT, bT] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)));
let s = seed >>> 0;
const next = () => {
  s = (s + 0x6d2b79f5) >>> 0;
  let t = s;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
};
const uniform = (n) => Float32Array.from({ length: n }, () => ((next() >>> 8) - 8388608) / 8388608);
const a = uniform(M * K), b = uniform(K * N);
const memory = new WebAssembly.Memory({ initial: 1, maximum: 65536, shared: true });
const ex = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(wasmPath)), { env: { memory } }).exports;
const W = ex.tile_cols.value * ex.panel_group.value;
const al = (n) => Math.ceil(n / 4) * 16;
const oa = 0, ob = al(M * K), oc = ob + al(K * N), opa = oc + al(M * N), opb = opa + al(4 * (M + 3) * K), os = opb + al(W * K);
memory.grow(Math.ceil((os + 144 * (2 + Math.ceil(M / 3))) / 65536));
new Float32Array(memory.buffer, oa, M * K).set(a);
new Float32Array(memory.buffer, ob, K * N).set(b);
const cut = N > 96 ? 96 : 12; // two column ranges, as two threads would compute them
ex.matmul(oa, ob, oc, opa, opb, os, M, K, N, aT, bT, cut, N, 2); // flags: A packed broadcast
ex.matmul(oa, ob, oc, opa, opb, os, M, K, N, aT, bT, 0, cut, 0); // A packed compact
console.log(crypto.createHash("sha256").update(new Uint8Array(memory.buffer, oc, M * N * 4).slice()).digest("hex"));
`;

function nodeAvailable(): boolean {
  try {
    return new Deno.Command("node", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
}

const HAS_NODE = nodeAvailable();
if (!HAS_NODE) console.log("wasm_test: node is not on PATH; the Node.js cross-engine parity test is ignored");

Deno.test({
  name:
    "matmul.wasm under Node.js gives the same bits as the reference under Deno (another V8, another engine build)",
  ignore: !HAS_NODE,
  fn: async () => {
    const wasmPath = new URL("../../kernels/wasm/matmul.wasm", import.meta.url).pathname;
    for (const [seed, M, K, N, layout] of [[71, 37, 129, 161, "nn"], [72, 5, 300, 29, "tt"]] as const) {
      const next = rng(seed);
      const a = uniform(next, M * K), b = uniform(next, K * N);
      const want = new Float32Array(M * N);
      matmulReference(a, b, want, M, K, N, layout);
      const out = await new Deno.Command("node", {
        args: ["-e", NODE_SCRIPT, wasmPath, String(seed), String(M), String(K), String(N), ...[
          layout[0] === "t" ? "1" : "0",
          layout[1] === "t" ? "1" : "0",
        ]],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      assert.equal(out.code, 0);
      const got = new TextDecoder().decode(out.stdout).trim();
      assert.equal(got, sha256Hex(new Uint8Array(want.buffer)), `seed ${seed} ${layout} ${M}x${K}x${N}`);
    }
  },
});

Deno.test("the matmul's finiteness check finds one Infinity or NaN anywhere in C, every tail length, on 1 and 2 threads", () => {
  // C [M,N] = A [M,1]·B [1,N] with A = 3e38: C[i,j] = 3e38·B[j], so B[j] = 2 overflows at column j only
  // (B[j] = -2: -Infinity; B[j] = NaN: NaN), every other element finite.
  const shapes: [number, number][] = [[1, 1], [1, 3], [1, 4], [1, 15], [1, 16], [1, 17], [2, 20], [3, 37], [
    64,
    200,
  ]];
  for (const [M, N] of shapes) {
    const a = new Float32Array(M).fill(3e38), c = new Float32Array(M * N);
    for (const bad of [2, -2, NaN]) {
      for (const j of new Set([0, N >> 1, N - 1])) {
        for (const threads of [1, 2]) {
          const b = new Float32Array(N).fill(0.5);
          assert.equal(wasmMatmul(a, b, c, M, 1, N, "nn", threads, true), true, `${M}x${N} finite`);
          b[j] = bad;
          assert.equal(wasmMatmul(a, b, c, M, 1, N, "nn", threads, true), false, `${M}x${N} ${bad} at ${j}`);
          assert.equal(wasmMatmul(a, b, c, M, 1, N, "nn", threads), true); // unchecked: always true
        }
      }
    }
  }
});
