;; NON-CONSENSUS int8 kernels for the drafter of draft-and-verify generation (kernels/draft.ts). Nothing they
;; compute is ever committed or compared across machines: the deterministic kernels verify every drafted
;; token. They use integer dot products and a float32 sum in lane order, which is fast, not the definition.
;;
;; Assembled by `deno task build:wasm` (npm:wabt, pinned) into draft.wasm and draft_wasm_bytes.ts. The memory
;; is the kernels' shared memory (kernels/wasm/kernel_memory.ts), so the matmul pool's workers run these too.
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; y[j] = Σ_b sw[j,b]·sx[b]·(Σ_{i<32} w[j,32b+i]·x[32b+i]) for jlo ≤ j < jhi, K a multiple of 32.
  ;; w: int8 [N][K] at $w; sw: f32 [N][K/32] at $sw; x: i16 [K] at $x (quantised activations, already
  ;; widened); sx: f32 [K/32] at $sx; y: f32 [N] at $y.
  (func (export "q8_matvec") (param $w i32) (param $sw i32) (param $x i32) (param $sx i32) (param $y i32)
    (param $K i32) (param $jlo i32) (param $jhi i32)
    (local $j i32) (local $b i32) (local $nb i32) (local $pw i32) (local $ps i32) (local $px i32) (local $pxs i32)
    (local $acc v128) (local $wv v128) (local $d v128)
    (local.set $nb (i32.shr_u (local.get $K) (i32.const 5)))
    (local.set $j (local.get $jlo))
    (local.set $pw (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $K))))
    (local.set $ps (i32.add (local.get $sw) (i32.shl (i32.mul (local.get $j) (local.get $nb)) (i32.const 2))))
    (block $done_j (loop $next_j
      (br_if $done_j (i32.ge_u (local.get $j) (local.get $jhi)))
      (local.set $acc (v128.const i32x4 0 0 0 0))
      (local.set $px (local.get $x))
      (local.set $pxs (local.get $sx))
      (local.set $b (i32.const 0))
      (block $done_b (loop $next_b
        (br_if $done_b (i32.ge_u (local.get $b) (local.get $nb)))
        (local.set $wv (v128.load offset=0 (local.get $pw)))
        (local.set $d (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv))
          (v128.load offset=0 (local.get $px))))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv))
          (v128.load offset=16 (local.get $px)))))
        (local.set $wv (v128.load offset=16 (local.get $pw)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv))
          (v128.load offset=32 (local.get $px)))))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv))
          (v128.load offset=48 (local.get $px)))))
        (local.set $acc (f32x4.add (local.get $acc)
          (f32x4.mul (f32x4.convert_i32x4_s (local.get $d))
            (f32x4.splat (f32.mul (f32.load (local.get $ps)) (f32.load (local.get $pxs)))))))
        (local.set $pw (i32.add (local.get $pw) (i32.const 32)))
        (local.set $px (i32.add (local.get $px) (i32.const 64)))
        (local.set $ps (i32.add (local.get $ps) (i32.const 4)))
        (local.set $pxs (i32.add (local.get $pxs) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $next_b)))
      (f32.store (i32.add (local.get $y) (i32.shl (local.get $j) (i32.const 2)))
        (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
          (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $next_j)))
  )
)
