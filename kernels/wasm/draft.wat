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
  (func $q8_matvec (export "q8_matvec") (param $w i32) (param $sw i32) (param $x i32) (param $sx i32) (param $y i32)
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

  ;; q8_matvec's values for the same arguments, four rows at a time: each block's 32 quantised activations are
  ;; loaded once for rows j … j + 3, and each row's integer dot products, its float32 scaling and lane sums
  ;; are q8_matvec's operations in q8_matvec's order, so every y[j] is the same bits (the exact head argmax's
  ;; bound is on those values); the rows left over (fewer than four) run q8_matvec.
  (func (export "q8_matvec4") (param $w i32) (param $sw i32) (param $x i32) (param $sx i32) (param $y i32)
    (param $K i32) (param $jlo i32) (param $jhi i32)
    (local $j i32) (local $b i32) (local $nb i32) (local $px i32) (local $pxs i32) (local $s f32)
    (local $pw0 i32) (local $pw1 i32) (local $pw2 i32) (local $pw3 i32)
    (local $ps0 i32) (local $ps1 i32) (local $ps2 i32) (local $ps3 i32)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $wv v128) (local $d v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $nb (i32.shr_u (local.get $K) (i32.const 5)))
    (local.set $j (local.get $jlo))
    (block $done_j (loop $next_j
      (br_if $done_j (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $jhi)))
      (local.set $pw0 (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $K))))
      (local.set $pw1 (i32.add (local.get $pw0) (local.get $K)))
      (local.set $pw2 (i32.add (local.get $pw1) (local.get $K)))
      (local.set $pw3 (i32.add (local.get $pw2) (local.get $K)))
      (local.set $ps0 (i32.add (local.get $sw) (i32.shl (i32.mul (local.get $j) (local.get $nb)) (i32.const 2))))
      (local.set $ps1 (i32.add (local.get $ps0) (i32.shl (local.get $nb) (i32.const 2))))
      (local.set $ps2 (i32.add (local.get $ps1) (i32.shl (local.get $nb) (i32.const 2))))
      (local.set $ps3 (i32.add (local.get $ps2) (i32.shl (local.get $nb) (i32.const 2))))
      (local.set $a0 (v128.const i32x4 0 0 0 0))
      (local.set $a1 (v128.const i32x4 0 0 0 0))
      (local.set $a2 (v128.const i32x4 0 0 0 0))
      (local.set $a3 (v128.const i32x4 0 0 0 0))
      (local.set $px (local.get $x))
      (local.set $pxs (local.get $sx))
      (local.set $b (i32.const 0))
      (block $done_b (loop $next_b
        (br_if $done_b (i32.ge_u (local.get $b) (local.get $nb)))
        (local.set $x0 (v128.load offset=0 (local.get $px)))
        (local.set $x1 (v128.load offset=16 (local.get $px)))
        (local.set $x2 (v128.load offset=32 (local.get $px)))
        (local.set $x3 (v128.load offset=48 (local.get $px)))
        (local.set $s (f32.load (local.get $pxs)))
        ;; row j + 0
        (local.set $wv (v128.load (local.get $pw0)))
        (local.set $d (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x0)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x1))))
        (local.set $wv (v128.load offset=16 (local.get $pw0)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x2))))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x3))))
        (local.set $a0 (f32x4.add (local.get $a0)
          (f32x4.mul (f32x4.convert_i32x4_s (local.get $d)) (f32x4.splat (f32.mul (f32.load (local.get $ps0)) (local.get $s))))))
        (local.set $pw0 (i32.add (local.get $pw0) (i32.const 32)))
        (local.set $ps0 (i32.add (local.get $ps0) (i32.const 4)))
        ;; row j + 1
        (local.set $wv (v128.load (local.get $pw1)))
        (local.set $d (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x0)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x1))))
        (local.set $wv (v128.load offset=16 (local.get $pw1)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x2))))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x3))))
        (local.set $a1 (f32x4.add (local.get $a1)
          (f32x4.mul (f32x4.convert_i32x4_s (local.get $d)) (f32x4.splat (f32.mul (f32.load (local.get $ps1)) (local.get $s))))))
        (local.set $pw1 (i32.add (local.get $pw1) (i32.const 32)))
        (local.set $ps1 (i32.add (local.get $ps1) (i32.const 4)))
        ;; row j + 2
        (local.set $wv (v128.load (local.get $pw2)))
        (local.set $d (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x0)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x1))))
        (local.set $wv (v128.load offset=16 (local.get $pw2)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x2))))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x3))))
        (local.set $a2 (f32x4.add (local.get $a2)
          (f32x4.mul (f32x4.convert_i32x4_s (local.get $d)) (f32x4.splat (f32.mul (f32.load (local.get $ps2)) (local.get $s))))))
        (local.set $pw2 (i32.add (local.get $pw2) (i32.const 32)))
        (local.set $ps2 (i32.add (local.get $ps2) (i32.const 4)))
        ;; row j + 3
        (local.set $wv (v128.load (local.get $pw3)))
        (local.set $d (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x0)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x1))))
        (local.set $wv (v128.load offset=16 (local.get $pw3)))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $wv)) (local.get $x2))))
        (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $wv)) (local.get $x3))))
        (local.set $a3 (f32x4.add (local.get $a3)
          (f32x4.mul (f32x4.convert_i32x4_s (local.get $d)) (f32x4.splat (f32.mul (f32.load (local.get $ps3)) (local.get $s))))))
        (local.set $pw3 (i32.add (local.get $pw3) (i32.const 32)))
        (local.set $ps3 (i32.add (local.get $ps3) (i32.const 4)))
        (local.set $px (i32.add (local.get $px) (i32.const 64)))
        (local.set $pxs (i32.add (local.get $pxs) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $next_b)))
      (f32.store offset=0 (i32.add (local.get $y) (i32.shl (local.get $j) (i32.const 2)))
        (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
          (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
      (f32.store offset=4 (i32.add (local.get $y) (i32.shl (local.get $j) (i32.const 2)))
        (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $a1)) (f32x4.extract_lane 1 (local.get $a1)))
          (f32.add (f32x4.extract_lane 2 (local.get $a1)) (f32x4.extract_lane 3 (local.get $a1)))))
      (f32.store offset=8 (i32.add (local.get $y) (i32.shl (local.get $j) (i32.const 2)))
        (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $a2)) (f32x4.extract_lane 1 (local.get $a2)))
          (f32.add (f32x4.extract_lane 2 (local.get $a2)) (f32x4.extract_lane 3 (local.get $a2)))))
      (f32.store offset=12 (i32.add (local.get $y) (i32.shl (local.get $j) (i32.const 2)))
        (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $a3)) (f32x4.extract_lane 1 (local.get $a3)))
          (f32.add (f32x4.extract_lane 2 (local.get $a3)) (f32x4.extract_lane 3 (local.get $a3)))))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br $next_j)))
    (call $q8_matvec (local.get $w) (local.get $sw) (local.get $x) (local.get $sx) (local.get $y) (local.get $K)
      (local.get $j) (local.get $jhi)))

  ;; The exact head argmax's bounds (kernels/head_argmax.ts headTokens), rows $lo ≤ v < $hi: with a = approx[v]
  ;; (this module's int8 logits, float32), bound = (hatNorm[v]·alpha + errNorm[v]·beta)·MARGIN + ETA, slack =
  ;; (|a| + bound)·WIDEN, it writes hi[v] = a + bound + slack and returns max_v (a − bound − slack) over the
  ;; rows, every operation in float64 in headTokens' order (IEEE, so the same values there and here), into
  ;; the f64 at $at + 64 + 8·$part (a pool job: parts split the rows). A non-finite a makes it NaN (the caller
  ;; then lets the whole head decide). Parameter block (f64 at $at): alpha, beta, MARGIN, ETA, WIDEN; then i32
  ;; at $at + 40: approx (f32 [V]), hatNorm, errNorm, hi (f64 [V]).
  (func (export "head_bounds") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $v i32) (local $a f64) (local $b f64) (local $s f64) (local $low f64) (local $bad i32)
    (local $alpha f64) (local $beta f64) (local $margin f64) (local $eta f64) (local $widen f64)
    (local $pa i32) (local $ph i32) (local $pe i32) (local $po i32) (local $o i32)
    (local.set $alpha (f64.load offset=0 (local.get $at)))
    (local.set $beta (f64.load offset=8 (local.get $at)))
    (local.set $margin (f64.load offset=16 (local.get $at)))
    (local.set $eta (f64.load offset=24 (local.get $at)))
    (local.set $widen (f64.load offset=32 (local.get $at)))
    (local.set $pa (i32.load offset=40 (local.get $at)))
    (local.set $ph (i32.load offset=44 (local.get $at)))
    (local.set $pe (i32.load offset=48 (local.get $at)))
    (local.set $po (i32.load offset=52 (local.get $at)))
    (local.set $low (f64.const -inf))
    (local.set $v (local.get $lo))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $v) (local.get $hi)))
      (local.set $a (f64.promote_f32 (f32.load (i32.add (local.get $pa) (i32.shl (local.get $v) (i32.const 2))))))
      (local.set $o (i32.shl (local.get $v) (i32.const 3)))
      (local.set $b (f64.add (f64.mul (f64.add
        (f64.mul (f64.load (i32.add (local.get $ph) (local.get $o))) (local.get $alpha))
        (f64.mul (f64.load (i32.add (local.get $pe) (local.get $o))) (local.get $beta)))
        (local.get $margin)) (local.get $eta)))
      (local.set $s (f64.mul (f64.add (f64.abs (local.get $a)) (local.get $b)) (local.get $widen)))
      (f64.store (i32.add (local.get $po) (local.get $o))
        (f64.add (f64.add (local.get $a) (local.get $b)) (local.get $s)))
      (local.set $low (f64.max (local.get $low) (f64.sub (f64.sub (local.get $a) (local.get $b)) (local.get $s))))
      (local.set $bad (i32.or (local.get $bad) (f64.ne (f64.sub (local.get $a) (local.get $a)) (f64.const 0))))
      (local.set $v (i32.add (local.get $v) (i32.const 1)))
      (br $next)))
    (f64.store offset=64 (i32.add (local.get $at) (i32.shl (local.get $part) (i32.const 3)))
      (select (f64.const nan) (local.get $low) (local.get $bad))))

  ;; The candidates of the exact head argmax: writes to $out (i32) every v < $n, ascending, whose hi[v] (f64 at
  ;; $hi) is not below $low, and returns how many.
  (func (export "head_candidates") (param $hi i32) (param $n i32) (param $low f64) (param $out i32) (result i32)
    (local $v i32) (local $count i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $v) (local.get $n)))
      (if (i32.eqz (f64.lt (f64.load (i32.add (local.get $hi) (i32.shl (local.get $v) (i32.const 3)))) (local.get $low)))
        (then
          (i32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2))) (local.get $v))
          (local.set $count (i32.add (local.get $count) (i32.const 1)))))
      (local.set $v (i32.add (local.get $v) (i32.const 1)))
      (br $next)))
    (local.get $count))
)
