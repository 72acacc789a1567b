;; The deterministic softmax kernels, bit-identical to the TypeScript reference they mirror: causal attention
;; split by (batch row, head) (kernels/attention.ts) and the head's cross-entropy split by vocabulary ranges
;; (kernels/cross_entropy.ts). Each job computes whole output elements with the reference's own reduction
;; order, so which thread runs which range never changes a bit:
;;
;; - every sum starts at +0 and adds fround(a·b) in ascending index order (f32.mul then f32.add, never a fused
;;   multiply-add; a SIMD lane is one such sum, lanes are different output elements);
;; - exp64 is kernels/math.ts's exp64 operation for operation (float64; the constants are its float64 values
;;   written exactly in hexadecimal), and expf is its float32 rounding;
;; - float32 division, subtraction and comparison are IEEE (the reference's Math.fround of a float64 result of
;;   two float32 operands is the same correctly rounded value).
;;
;; Arguments are byte offsets into the kernels' shared memory (kernels/wasm/kernel_memory.ts); each job gets a
;; pointer to a block of i32 parameters (written by the caller before the job) and its range [lo, hi).
;; Assembled by `deno task build:wasm` (npm:wabt, pinned) into softmax.wasm and softmax_wasm_bytes.ts.
(module
  (import "env" "memory" (memory 1 65536 shared))

  ;; 2^k for an integer k in [-1022, 1023], from its bits (exact).
  (func $pow2 (param $k i32) (result f64)
    (f64.reinterpret_i64
      (i64.shl (i64.extend_i32_s (i32.add (local.get $k) (i32.const 1023))) (i64.const 52))))

  ;; e^x in float64, exactly kernels/math.ts exp64: k = floor(x·log2 e + 1/2); r = (x − k·ln2_hi) − k·ln2_lo;
  ;; the Taylor polynomial to degree 13 by Horner's rule; times 2^k.
  (func $exp64 (param $x f64) (result f64)
    (local $k f64) (local $r f64) (local $p f64) (local $ki i32)
    (if (f64.ne (local.get $x) (local.get $x)) (then (return (local.get $x))))
    (if (f64.gt (local.get $x) (f64.const 0x1.62e42fefa39efp9)) (then (return (f64.const inf))))
    (if (f64.lt (local.get $x) (f64.const -0x1.749999999999ap9)) (then (return (f64.const 0))))
    (local.set $k (f64.floor (f64.add (f64.mul (local.get $x) (f64.const 0x1.71547652b82fep0))
      (f64.const 0.5))))
    (local.set $r (f64.sub
      (f64.sub (local.get $x) (f64.mul (local.get $k) (f64.const 0x1.62e42fee00000p-1)))
      (f64.mul (local.get $k) (f64.const 0x1.a39ef35793c76p-33))))
    (local.set $p (f64.const 0x1.6124613a86d0ap-33))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.1eed8eff8d898p-29)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.ae64567f544e4p-26)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.27e4fb7789f5dp-22)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.71de3a556c734p-19)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.a01a01a01a01ap-16)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.a01a01a01a01ap-13)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.6c16c16c16c17p-10)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.1111111111111p-7)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.5555555555555p-5)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.5555555555555p-3)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 0x1.0000000000000p-1)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 1)))
    (local.set $p (f64.add (f64.mul (local.get $p) (local.get $r)) (f64.const 1)))
    (local.set $ki (i32.trunc_f64_s (local.get $k)))
    (if (i32.gt_s (local.get $ki) (i32.const 1023))
      (then (return (f64.mul (f64.mul (local.get $p) (call $pow2 (i32.sub (local.get $ki) (i32.const 1))))
        (f64.const 2)))))
    (if (i32.lt_s (local.get $ki) (i32.const -1020))
      (then (return (f64.mul (f64.mul (local.get $p) (call $pow2 (i32.add (local.get $ki) (i32.const 60))))
        (call $pow2 (i32.const -60))))))
    (f64.mul (local.get $p) (call $pow2 (local.get $ki))))

  ;; expf(x) = fround(exp64(x)) for a float32 x.
  (func $expf (param $x f32) (result f32)
    (f32.demote_f64 (call $exp64 (f64.promote_f32 (local.get $x)))))

;; e^x of two float64 lanes, each exactly $exp64's operations, for lanes in [-707, 709] only (there 2^k needs
;; no special case; the callers check the range): f64x2 arithmetic is IEEE, lane by lane.
  (func $exp64x2 (param $x v128) (result v128)
    (local $k v128) (local $r v128) (local $p v128)
    (local.set $k (f64x2.floor (f64x2.add (f64x2.mul (local.get $x) (f64x2.splat (f64.const 0x1.71547652b82fep0)))
      (f64x2.splat (f64.const 0.5)))))
    (local.set $r (f64x2.sub
      (f64x2.sub (local.get $x) (f64x2.mul (local.get $k) (f64x2.splat (f64.const 0x1.62e42fee00000p-1))))
      (f64x2.mul (local.get $k) (f64x2.splat (f64.const 0x1.a39ef35793c76p-33)))))
    (local.set $p (f64x2.splat (f64.const 0x1.6124613a86d0ap-33)))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.1eed8eff8d898p-29))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.ae64567f544e4p-26))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.27e4fb7789f5dp-22))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.71de3a556c734p-19))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.a01a01a01a01ap-16))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.a01a01a01a01ap-13))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.6c16c16c16c17p-10))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.1111111111111p-7))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.5555555555555p-5))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.5555555555555p-3))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 0x1.0000000000000p-1))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 1))))
    (local.set $p (f64x2.add (f64x2.mul (local.get $p) (local.get $r)) (f64x2.splat (f64.const 1))))
    ;; times 2^k, built from the bits (k + 1023) << 52
    (f64x2.mul (local.get $p) (i64x2.shl (i64x2.add
      (i64x2.extend_low_i32x4_s (i32x4.trunc_sat_f64x2_s_zero (local.get $k))) (i64x2.splat (i64.const 1023)))
      (i32.const 52))))

;; expf of four float32 lanes, each exactly $expf: where every lane is in [-707, 709] two $exp64x2 side by
;; side, else lane by lane through $expf (NaN, infinities and the extremes).
  (func $expf4 (param $x v128) (result v128)
    (if (i32.eqz (i32x4.all_true (v128.and
        (f32x4.ge (local.get $x) (f32x4.splat (f32.const -707)))
        (f32x4.le (local.get $x) (f32x4.splat (f32.const 709))))))
      (then (return
        (f32x4.replace_lane 3 (f32x4.replace_lane 2 (f32x4.replace_lane 1
          (f32x4.splat (call $expf (f32x4.extract_lane 0 (local.get $x))))
          (call $expf (f32x4.extract_lane 1 (local.get $x))))
          (call $expf (f32x4.extract_lane 2 (local.get $x))))
          (call $expf (f32x4.extract_lane 3 (local.get $x)))))))
    (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
      (f32x4.demote_f64x2_zero (call $exp64x2 (f64x2.promote_low_f32x4 (local.get $x))))
      (f32x4.demote_f64x2_zero (call $exp64x2 (f64x2.promote_low_f32x4
        (i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15 (local.get $x) (local.get $x)))))))

  ;; The exported expf4, for the test that compares it lane by lane with kernels/math.ts expf: reads four
  ;; float32 at $x, writes their expf at $y.
  (func (export "expf4") (param $x i32) (param $y i32)
    (v128.store (local.get $y) (call $expf4 (v128.load (local.get $x)))))

  ;; The exported exp64, for the test that compares it with kernels/math.ts on many inputs.
  (func (export "exp64") (param $x f64) (result f64) (call $exp64 (local.get $x)))

  ;; dst[e·D + d] = src[e·stride + d] transposed: dst[d·n + e] for e < n, d < D (floats). Blocks of 4×4 by
  ;; SIMD shuffles (four rows of four loaded, four columns stored: the bits move unchanged), then the last
  ;; columns of each row and the last rows one float at a time.
  (func $transpose (param $src i32) (param $stride i32) (param $n i32) (param $D i32) (param $dst i32)
    (local $e i32) (local $d i32) (local $s i32) (local $o i32) (local $rs i32) (local $ds i32)
    (local $n4 i32) (local $D4 i32)
    (local $r0 v128) (local $r1 v128) (local $r2 v128) (local $r3 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local.set $rs (i32.shl (local.get $stride) (i32.const 2))) ;; bytes from one source row to the next
    (local.set $ds (i32.shl (local.get $n) (i32.const 2))) ;; bytes from one destination row to the next
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $D4 (i32.and (local.get $D) (i32.const -4)))
    (local.set $e (i32.const 0))
    (block $be (loop $le
      (br_if $be (i32.ge_u (local.get $e) (local.get $n4)))
      (local.set $d (i32.const 0))
      (block $bd (loop $ld
        (br_if $bd (i32.ge_u (local.get $d) (local.get $D4)))
        (local.set $s (i32.add (local.get $src)
          (i32.shl (i32.add (i32.mul (local.get $e) (local.get $stride)) (local.get $d)) (i32.const 2))))
        (local.set $r0 (v128.load (local.get $s)))
        (local.set $r1 (v128.load (i32.add (local.get $s) (local.get $rs))))
        (local.set $r2 (v128.load (i32.add (local.get $s) (i32.shl (local.get $rs) (i32.const 1)))))
        (local.set $r3 (v128.load (i32.add (local.get $s) (i32.mul (local.get $rs) (i32.const 3)))))
        ;; t0 = r0[0] r1[0] r0[1] r1[1], t1 = r2[0] r3[0] r2[1] r3[1], t2 and t3 the same of lanes 2 and 3
        (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $r0) (local.get $r1)))
        (local.set $t1 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $r2) (local.get $r3)))
        (local.set $t2 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $r0) (local.get $r1)))
        (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $r2) (local.get $r3)))
        (local.set $o (i32.add (local.get $dst)
          (i32.shl (i32.add (i32.mul (local.get $d) (local.get $n)) (local.get $e)) (i32.const 2))))
        ;; column d+c of the four rows: r0[c] r1[c] r2[c] r3[c]
        (v128.store (local.get $o)
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t1)))
        (v128.store (i32.add (local.get $o) (local.get $ds))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t1)))
        (v128.store (i32.add (local.get $o) (i32.shl (local.get $ds) (i32.const 1)))
          (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t2) (local.get $t3)))
        (v128.store (i32.add (local.get $o) (i32.mul (local.get $ds) (i32.const 3)))
          (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t2) (local.get $t3)))
        (local.set $d (i32.add (local.get $d) (i32.const 4)))
        (br $ld)))
      (local.set $e (i32.add (local.get $e) (i32.const 4)))
      (br $le)))
    ;; what the blocks left: columns D4 … D−1 of rows below n4, every column of the rows from n4
    (local.set $e (i32.const 0))
    (block $te (loop $lte
      (br_if $te (i32.ge_u (local.get $e) (local.get $n)))
      (local.set $s (i32.add (local.get $src) (i32.shl (i32.mul (local.get $e) (local.get $stride)) (i32.const 2))))
      (local.set $d (select (local.get $D4) (i32.const 0) (i32.lt_u (local.get $e) (local.get $n4))))
      (block $td (loop $ltd
        (br_if $td (i32.ge_u (local.get $d) (local.get $D)))
        (f32.store
          (i32.add (local.get $dst) (i32.shl (i32.add (i32.mul (local.get $d) (local.get $n)) (local.get $e))
            (i32.const 2)))
          (f32.load (i32.add (local.get $s) (i32.shl (local.get $d) (i32.const 2)))))
        (local.set $d (i32.add (local.get $d) (i32.const 1)))
        (br $ltd)))
      (local.set $e (i32.add (local.get $e) (i32.const 1)))
      (br $lte))))

  ;; dst[j] = Σ_{d<D} fround(a[d]·bT[d·ld + j]) (d ascending from +0) for j < n: the dot products of the row
  ;; a with n rows of a matrix stored transposed (bT: [D, ld]). Thirty-two j at a time in eight SIMD
  ;; accumulators (each step reads 128 contiguous bytes of a row of bT), then four at a time, then one.
  (func $dots (param $a i32) (param $bT i32) (param $ld i32) (param $D i32) (param $n i32) (param $dst i32)
    (local $j i32) (local $d i32) (local $acc v128) (local $s f32) (local $pb i32) (local $w v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local.set $j (i32.const 0))
    (block $dw (loop $lw
      (br_if $dw (i32.gt_u (i32.add (local.get $j) (i32.const 32)) (local.get $n)))
      (local.set $a0 (v128.const f32x4 0 0 0 0))
      (local.set $a1 (v128.const f32x4 0 0 0 0))
      (local.set $a2 (v128.const f32x4 0 0 0 0))
      (local.set $a3 (v128.const f32x4 0 0 0 0))
      (local.set $a4 (v128.const f32x4 0 0 0 0))
      (local.set $a5 (v128.const f32x4 0 0 0 0))
      (local.set $a6 (v128.const f32x4 0 0 0 0))
      (local.set $a7 (v128.const f32x4 0 0 0 0))
      (local.set $pb (i32.add (local.get $bT) (i32.shl (local.get $j) (i32.const 2))))
      (local.set $d (i32.const 0))
      (block $dd (loop $ld
        (br_if $dd (i32.ge_u (local.get $d) (local.get $D)))
        (local.set $w (f32x4.splat (f32.load (i32.add (local.get $a) (i32.shl (local.get $d) (i32.const 2))))))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $w) (v128.load offset=0 (local.get $pb)))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $w) (v128.load offset=16 (local.get $pb)))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $w) (v128.load offset=32 (local.get $pb)))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $w) (v128.load offset=48 (local.get $pb)))))
        (local.set $a4 (f32x4.add (local.get $a4) (f32x4.mul (local.get $w) (v128.load offset=64 (local.get $pb)))))
        (local.set $a5 (f32x4.add (local.get $a5) (f32x4.mul (local.get $w) (v128.load offset=80 (local.get $pb)))))
        (local.set $a6 (f32x4.add (local.get $a6) (f32x4.mul (local.get $w) (v128.load offset=96 (local.get $pb)))))
        (local.set $a7 (f32x4.add (local.get $a7) (f32x4.mul (local.get $w) (v128.load offset=112 (local.get $pb)))))
        (local.set $pb (i32.add (local.get $pb) (i32.shl (local.get $ld) (i32.const 2))))
        (local.set $d (i32.add (local.get $d) (i32.const 1)))
        (br $ld)))
      (local.set $pb (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2))))
      (v128.store offset=0 (local.get $pb) (local.get $a0))
      (v128.store offset=16 (local.get $pb) (local.get $a1))
      (v128.store offset=32 (local.get $pb) (local.get $a2))
      (v128.store offset=48 (local.get $pb) (local.get $a3))
      (v128.store offset=64 (local.get $pb) (local.get $a4))
      (v128.store offset=80 (local.get $pb) (local.get $a5))
      (v128.store offset=96 (local.get $pb) (local.get $a6))
      (v128.store offset=112 (local.get $pb) (local.get $a7))
      (local.set $j (i32.add (local.get $j) (i32.const 32)))
      (br $lw)))
    (block $dv (loop $lv
      (br_if $dv (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $n)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $pb (i32.add (local.get $bT) (i32.shl (local.get $j) (i32.const 2))))
      (local.set $d (i32.const 0))
      (block $dd (loop $ld
        (br_if $dd (i32.ge_u (local.get $d) (local.get $D)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul
          (f32x4.splat (f32.load (i32.add (local.get $a) (i32.shl (local.get $d) (i32.const 2)))))
          (v128.load (local.get $pb)))))
        (local.set $pb (i32.add (local.get $pb) (i32.shl (local.get $ld) (i32.const 2))))
        (local.set $d (i32.add (local.get $d) (i32.const 1)))
        (br $ld)))
      (v128.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2))) (local.get $acc))
      (local.set $j (i32.add (local.get $j) (i32.const 4)))
      (br $lv)))
    (block $ds (loop $ls
      (br_if $ds (i32.ge_u (local.get $j) (local.get $n)))
      (local.set $s (f32.const 0))
      (local.set $d (i32.const 0))
      (block $dd (loop $ld
        (br_if $dd (i32.ge_u (local.get $d) (local.get $D)))
        (local.set $s (f32.add (local.get $s) (f32.mul
          (f32.load (i32.add (local.get $a) (i32.shl (local.get $d) (i32.const 2))))
          (f32.load (i32.add (local.get $bT) (i32.shl (i32.add (i32.mul (local.get $d) (local.get $ld))
            (local.get $j)) (i32.const 2)))))))
        (local.set $d (i32.add (local.get $d) (i32.const 1)))
        (br $ld)))
      (f32.store (i32.add (local.get $dst) (i32.shl (local.get $j) (i32.const 2))) (local.get $s))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $ls))))

  ;; dst[d] = Σ_{j<n} fround(a[j·as]·x[j·xs + d]) (j ascending from +0) for d < D: a weighted sum of n rows
  ;; of x (row stride xs floats) with weights a (stride as floats). Thirty-two d at a time in eight SIMD
  ;; accumulators (each step reads 128 contiguous bytes of a row of x), then four at a time, then one.
  (func $wsum (param $a i32) (param $as i32) (param $x i32) (param $xs i32) (param $n i32) (param $D i32)
    (param $dst i32)
    (local $d i32) (local $j i32) (local $acc v128) (local $s f32) (local $pa i32) (local $px i32)
    (local $w f32) (local $w4 v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local.set $d (i32.const 0))
    (block $dw (loop $lw
      (br_if $dw (i32.gt_u (i32.add (local.get $d) (i32.const 32)) (local.get $D)))
      (local.set $a0 (v128.const f32x4 0 0 0 0))
      (local.set $a1 (v128.const f32x4 0 0 0 0))
      (local.set $a2 (v128.const f32x4 0 0 0 0))
      (local.set $a3 (v128.const f32x4 0 0 0 0))
      (local.set $a4 (v128.const f32x4 0 0 0 0))
      (local.set $a5 (v128.const f32x4 0 0 0 0))
      (local.set $a6 (v128.const f32x4 0 0 0 0))
      (local.set $a7 (v128.const f32x4 0 0 0 0))
      (local.set $pa (local.get $a))
      (local.set $px (i32.add (local.get $x) (i32.shl (local.get $d) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $dj (loop $lj
        (br_if $dj (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $w4 (f32x4.splat (f32.load (local.get $pa))))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $w4) (v128.load offset=0 (local.get $px)))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $w4) (v128.load offset=16 (local.get $px)))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $w4) (v128.load offset=32 (local.get $px)))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $w4) (v128.load offset=48 (local.get $px)))))
        (local.set $a4 (f32x4.add (local.get $a4) (f32x4.mul (local.get $w4) (v128.load offset=64 (local.get $px)))))
        (local.set $a5 (f32x4.add (local.get $a5) (f32x4.mul (local.get $w4) (v128.load offset=80 (local.get $px)))))
        (local.set $a6 (f32x4.add (local.get $a6) (f32x4.mul (local.get $w4) (v128.load offset=96 (local.get $px)))))
        (local.set $a7 (f32x4.add (local.get $a7) (f32x4.mul (local.get $w4) (v128.load offset=112 (local.get $px)))))
        (local.set $pa (i32.add (local.get $pa) (i32.shl (local.get $as) (i32.const 2))))
        (local.set $px (i32.add (local.get $px) (i32.shl (local.get $xs) (i32.const 2))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $lj)))
      (local.set $px (i32.add (local.get $dst) (i32.shl (local.get $d) (i32.const 2))))
      (v128.store offset=0 (local.get $px) (local.get $a0))
      (v128.store offset=16 (local.get $px) (local.get $a1))
      (v128.store offset=32 (local.get $px) (local.get $a2))
      (v128.store offset=48 (local.get $px) (local.get $a3))
      (v128.store offset=64 (local.get $px) (local.get $a4))
      (v128.store offset=80 (local.get $px) (local.get $a5))
      (v128.store offset=96 (local.get $px) (local.get $a6))
      (v128.store offset=112 (local.get $px) (local.get $a7))
      (local.set $d (i32.add (local.get $d) (i32.const 32)))
      (br $lw)))
    (block $dv (loop $lv
      (br_if $dv (i32.gt_u (i32.add (local.get $d) (i32.const 4)) (local.get $D)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $pa (local.get $a))
      (local.set $px (i32.add (local.get $x) (i32.shl (local.get $d) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $dj (loop $lj
        (br_if $dj (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $acc (f32x4.add (local.get $acc)
          (f32x4.mul (f32x4.splat (f32.load (local.get $pa))) (v128.load (local.get $px)))))
        (local.set $pa (i32.add (local.get $pa) (i32.shl (local.get $as) (i32.const 2))))
        (local.set $px (i32.add (local.get $px) (i32.shl (local.get $xs) (i32.const 2))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $lj)))
      (v128.store (i32.add (local.get $dst) (i32.shl (local.get $d) (i32.const 2))) (local.get $acc))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (br $lv)))
    (block $ds (loop $ls
      (br_if $ds (i32.ge_u (local.get $d) (local.get $D)))
      (local.set $s (f32.const 0))
      (local.set $pa (local.get $a))
      (local.set $px (i32.add (local.get $x) (i32.shl (local.get $d) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $dj (loop $lj
        (br_if $dj (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $pa)) (f32.load (local.get $px)))))
        (local.set $pa (i32.add (local.get $pa) (i32.shl (local.get $as) (i32.const 2))))
        (local.set $px (i32.add (local.get $px) (i32.shl (local.get $xs) (i32.const 2))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $lj)))
      (f32.store (i32.add (local.get $dst) (i32.shl (local.get $d) (i32.const 2))) (local.get $s))
      (local.set $d (i32.add (local.get $d) (i32.const 1)))
      (br $ls))))

  ;; $wsum with unit weight stride for two output rows at once: dst[d] from the weights a and dst + dld floats
  ;; from the weights a + ald floats, sixteen d of both rows in eight SIMD accumulators (each row of x read
  ;; once for both), the d that remain through $wsum. Each output element's sum is $wsum's, term for term.
  (func $wsum2 (param $a i32) (param $ald i32) (param $x i32) (param $xs i32) (param $n i32) (param $D i32)
    (param $dst i32) (param $dld i32)
    (local $d i32) (local $j i32) (local $pa i32) (local $px i32) (local $pd i32) (local $w0 v128) (local $w1 v128)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $a4 v128) (local $a5 v128) (local $a6 v128) (local $a7 v128)
    (local.set $d (i32.const 0))
    (block $dw (loop $lw
      (br_if $dw (i32.gt_u (i32.add (local.get $d) (i32.const 16)) (local.get $D)))
      (local.set $a0 (v128.const f32x4 0 0 0 0))
      (local.set $a1 (v128.const f32x4 0 0 0 0))
      (local.set $a2 (v128.const f32x4 0 0 0 0))
      (local.set $a3 (v128.const f32x4 0 0 0 0))
      (local.set $a4 (v128.const f32x4 0 0 0 0))
      (local.set $a5 (v128.const f32x4 0 0 0 0))
      (local.set $a6 (v128.const f32x4 0 0 0 0))
      (local.set $a7 (v128.const f32x4 0 0 0 0))
      (local.set $pa (local.get $a))
      (local.set $px (i32.add (local.get $x) (i32.shl (local.get $d) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $dj (loop $lj
        (br_if $dj (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $w0 (f32x4.splat (f32.load (local.get $pa))))
        (local.set $w1 (f32x4.splat (f32.load (i32.add (local.get $pa) (i32.shl (local.get $ald) (i32.const 2))))))
        (local.set $x0 (v128.load offset=0 (local.get $px)))
        (local.set $x1 (v128.load offset=16 (local.get $px)))
        (local.set $x2 (v128.load offset=32 (local.get $px)))
        (local.set $x3 (v128.load offset=48 (local.get $px)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $w0) (local.get $x0))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $w0) (local.get $x1))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $w0) (local.get $x2))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $w0) (local.get $x3))))
        (local.set $a4 (f32x4.add (local.get $a4) (f32x4.mul (local.get $w1) (local.get $x0))))
        (local.set $a5 (f32x4.add (local.get $a5) (f32x4.mul (local.get $w1) (local.get $x1))))
        (local.set $a6 (f32x4.add (local.get $a6) (f32x4.mul (local.get $w1) (local.get $x2))))
        (local.set $a7 (f32x4.add (local.get $a7) (f32x4.mul (local.get $w1) (local.get $x3))))
        (local.set $pa (i32.add (local.get $pa) (i32.const 4)))
        (local.set $px (i32.add (local.get $px) (i32.shl (local.get $xs) (i32.const 2))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $lj)))
      (local.set $pd (i32.add (local.get $dst) (i32.shl (local.get $d) (i32.const 2))))
      (v128.store offset=0 (local.get $pd) (local.get $a0))
      (v128.store offset=16 (local.get $pd) (local.get $a1))
      (v128.store offset=32 (local.get $pd) (local.get $a2))
      (v128.store offset=48 (local.get $pd) (local.get $a3))
      (v128.store offset=0 (i32.add (local.get $pd) (i32.shl (local.get $dld) (i32.const 2))) (local.get $a4))
      (v128.store offset=16 (i32.add (local.get $pd) (i32.shl (local.get $dld) (i32.const 2))) (local.get $a5))
      (v128.store offset=32 (i32.add (local.get $pd) (i32.shl (local.get $dld) (i32.const 2))) (local.get $a6))
      (v128.store offset=48 (i32.add (local.get $pd) (i32.shl (local.get $dld) (i32.const 2))) (local.get $a7))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (br $lw)))
    (if (i32.lt_u (local.get $d) (local.get $D))
      (then
        (call $wsum (local.get $a) (i32.const 1) (i32.add (local.get $x) (i32.shl (local.get $d) (i32.const 2)))
          (local.get $xs) (local.get $n) (i32.sub (local.get $D) (local.get $d))
          (i32.add (local.get $dst) (i32.shl (local.get $d) (i32.const 2))))
        (call $wsum (i32.add (local.get $a) (i32.shl (local.get $ald) (i32.const 2))) (i32.const 1)
          (i32.add (local.get $x) (i32.shl (local.get $d) (i32.const 2))) (local.get $xs) (local.get $n)
          (i32.sub (local.get $D) (local.get $d))
          (i32.add (i32.add (local.get $dst) (i32.shl (local.get $dld) (i32.const 2)))
            (i32.shl (local.get $d) (i32.const 2)))))))

  ;; rows weighted sums: row r of dst (stride dld floats) is $wsum of the weights row r of a (stride ald
  ;; floats, unit stride within the row) over the first min(n, n0 + r + 1) rows of x; two rows at a time
  ;; through $wsum2 (over the second row's count: the first row's weight past its own is then read too).
  ;; With n0 ≥ n every row sums over all n; attention's forward passes n0 = Tk − Tq, so a query's sum stops
  ;; after its last unmasked key. The terms left out are fround(+0·v) = ±0 for a finite v (the values are
  ;; checked finite), and a sum that starts at +0 is never −0, so adding them never changes it: the same bits.
  (func $wsums (param $a i32) (param $ald i32) (param $x i32) (param $xs i32) (param $n i32) (param $D i32)
    (param $dst i32) (param $dld i32) (param $rows i32) (param $n0 i32)
    (local $r i32) (local $m i32)
    (local.set $r (i32.const 0))
    (block $dr (loop $lr
      (br_if $dr (i32.gt_u (i32.add (local.get $r) (i32.const 2)) (local.get $rows)))
      (local.set $m (i32.add (local.get $n0) (i32.add (local.get $r) (i32.const 2))))
      (if (i32.gt_u (local.get $m) (local.get $n)) (then (local.set $m (local.get $n))))
      (call $wsum2 (i32.add (local.get $a) (i32.shl (i32.mul (local.get $r) (local.get $ald)) (i32.const 2)))
        (local.get $ald) (local.get $x) (local.get $xs) (local.get $m) (local.get $D)
        (i32.add (local.get $dst) (i32.shl (i32.mul (local.get $r) (local.get $dld)) (i32.const 2)))
        (local.get $dld))
      (local.set $r (i32.add (local.get $r) (i32.const 2)))
      (br $lr)))
    (if (i32.lt_u (local.get $r) (local.get $rows))
      (then
        (local.set $m (i32.add (local.get $n0) (i32.add (local.get $r) (i32.const 1))))
        (if (i32.gt_u (local.get $m) (local.get $n)) (then (local.set $m (local.get $n))))
        (call $wsum
        (i32.add (local.get $a) (i32.shl (i32.mul (local.get $r) (local.get $ald)) (i32.const 2))) (i32.const 1)
        (local.get $x) (local.get $xs) (local.get $m) (local.get $D)
        (i32.add (local.get $dst) (i32.shl (i32.mul (local.get $r) (local.get $dld)) (i32.const 2)))))))

  ;; The i32 parameter i of a job's parameter block.
  (func $arg (param $at i32) (param $i i32) (result i32)
    (i32.load (i32.add (local.get $at) (i32.shl (local.get $i) (i32.const 2)))))

  ;; Attention forward for units u in [lo, hi), u = b·H + h (kernels/attention.ts attentionForward). Parameter
  ;; block: q k v out p scratch Tq Tk H KVH D scratchPerThread; this job's scratch is at scratch +
  ;; part·scratchPerThread bytes (D·Tk floats: the unit's keys transposed). The heads of one group read the
  ;; same keys, so consecutive units of one row and group transpose them once (decoding one token, the
  ;; scalar transposition of the whole cache's keys was most of the call: three times per group).
  (func (export "attention_forward") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $q i32) (local $k i32) (local $v i32) (local $out i32) (local $p i32) (local $kT i32)
    (local $Tq i32) (local $Tk i32) (local $H i32) (local $KVH i32) (local $D i32)
    (local $u i32) (local $b i32) (local $h i32) (local $g i32) (local $i i32) (local $j i32)
    (local $last i32) (local $row i32) (local $qW i32) (local $kW i32)
    (local $sigma f32) (local $m f32) (local $sj f32) (local $z f32) (local $e f32)
    (local $ev v128) (local $held i32)
    (local.set $held (i32.const -1)) ;; b·KVH + g of the keys in kT, −1 for none yet
    (local.set $q (call $arg (local.get $at) (i32.const 0)))
    (local.set $k (call $arg (local.get $at) (i32.const 1)))
    (local.set $v (call $arg (local.get $at) (i32.const 2)))
    (local.set $out (call $arg (local.get $at) (i32.const 3)))
    (local.set $p (call $arg (local.get $at) (i32.const 4)))
    (local.set $Tq (call $arg (local.get $at) (i32.const 6)))
    (local.set $Tk (call $arg (local.get $at) (i32.const 7)))
    (local.set $H (call $arg (local.get $at) (i32.const 8)))
    (local.set $KVH (call $arg (local.get $at) (i32.const 9)))
    (local.set $D (call $arg (local.get $at) (i32.const 10)))
    (local.set $kT (i32.add (call $arg (local.get $at) (i32.const 5))
      (i32.mul (local.get $part) (call $arg (local.get $at) (i32.const 11)))))
    (local.set $qW (i32.mul (local.get $H) (local.get $D)))
    (local.set $kW (i32.mul (local.get $KVH) (local.get $D)))
    (local.set $sigma (f32.demote_f64 (f64.div (f64.const 1) (f64.sqrt (f64.convert_i32_s (local.get $D))))))
    (local.set $u (local.get $lo))
    (block $du (loop $lu
      (br_if $du (i32.ge_u (local.get $u) (local.get $hi)))
      (local.set $b (i32.div_u (local.get $u) (local.get $H)))
      (local.set $h (i32.rem_u (local.get $u) (local.get $H)))
      (local.set $g (i32.div_u (local.get $h) (i32.div_u (local.get $H) (local.get $KVH))))
      ;; kT: [D, Tk], this row's keys of group g (already there when the previous unit had them)
      (if (i32.ne (local.get $held) (i32.add (i32.mul (local.get $b) (local.get $KVH)) (local.get $g)))
        (then
          (call $transpose
            (i32.add (local.get $k) (i32.shl (i32.add (i32.mul (i32.mul (local.get $b) (local.get $Tk)) (local.get $kW))
              (i32.mul (local.get $g) (local.get $D))) (i32.const 2)))
            (local.get $kW) (local.get $Tk) (local.get $D) (local.get $kT))
          (local.set $held (i32.add (i32.mul (local.get $b) (local.get $KVH)) (local.get $g)))))
      (local.set $i (i32.const 0))
      (block $di (loop $li
        (br_if $di (i32.ge_u (local.get $i) (local.get $Tq)))
        (local.set $last (i32.add (i32.sub (local.get $Tk) (local.get $Tq)) (local.get $i)))
        ;; row: this query's probabilities p[b, h, i, :]
        (local.set $row (i32.add (local.get $p) (i32.shl (i32.mul
          (i32.add (i32.mul (i32.add (i32.mul (local.get $b) (local.get $H)) (local.get $h)) (local.get $Tq))
            (local.get $i))
          (local.get $Tk)) (i32.const 2))))
        ;; s_ij for j ≤ last, into the row
        (call $dots
          (i32.add (local.get $q) (i32.shl (i32.add (i32.mul (i32.add (i32.mul (local.get $b) (local.get $Tq))
            (local.get $i)) (local.get $qW)) (i32.mul (local.get $h) (local.get $D))) (i32.const 2)))
          (local.get $kT) (local.get $Tk) (local.get $D) (i32.add (local.get $last) (i32.const 1))
          (local.get $row))
        ;; m = max_j fround(s_ij·σ), j ascending (a later value replaces m only when greater)
        (local.set $m (f32.mul (f32.load (local.get $row)) (local.get $sigma)))
        (local.set $j (i32.const 1))
        (block $dm (loop $lm
          (br_if $dm (i32.gt_s (local.get $j) (local.get $last)))
          (local.set $sj (f32.mul (f32.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))))
            (local.get $sigma)))
          (if (f32.gt (local.get $sj) (local.get $m)) (then (local.set $m (local.get $sj))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $lm)))
        ;; e_ij = expf(fround(s_ij·σ) − m); z = Σ e_ij (j ascending from +0): four j at a time through
        ;; $expf4 (which is $expf lane by lane), their lanes added to z in order, then one at a time
        (local.set $z (f32.const 0))
        (local.set $j (i32.const 0))
        (block $de4 (loop $le4
          (br_if $de4 (i32.gt_s (i32.add (local.get $j) (i32.const 3)) (local.get $last)))
          (local.set $ev (call $expf4 (f32x4.sub (f32x4.mul (v128.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))) (f32x4.splat (local.get $sigma)))
            (f32x4.splat (local.get $m)))))
          (v128.store (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))) (local.get $ev))
          (local.set $z (f32.add (local.get $z) (f32x4.extract_lane 0 (local.get $ev))))
          (local.set $z (f32.add (local.get $z) (f32x4.extract_lane 1 (local.get $ev))))
          (local.set $z (f32.add (local.get $z) (f32x4.extract_lane 2 (local.get $ev))))
          (local.set $z (f32.add (local.get $z) (f32x4.extract_lane 3 (local.get $ev))))
          (local.set $j (i32.add (local.get $j) (i32.const 4)))
          (br $le4)))
        (block $de (loop $le
          (br_if $de (i32.gt_s (local.get $j) (local.get $last)))
          (local.set $e (call $expf (f32.sub (f32.mul
            (f32.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))) (local.get $sigma))
            (local.get $m))))
          (f32.store (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))) (local.get $e))
          (local.set $z (f32.add (local.get $z) (local.get $e)))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $le)))
        ;; p_ij = e_ij / z for j ≤ last (four at a time, then one), +0 above
        (local.set $j (i32.const 0))
        (block $dp4 (loop $lp4
          (br_if $dp4 (i32.gt_s (i32.add (local.get $j) (i32.const 3)) (local.get $last)))
          (v128.store (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))) (f32x4.div (v128.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))) (f32x4.splat (local.get $z))))
          (local.set $j (i32.add (local.get $j) (i32.const 4)))
          (br $lp4)))
        (block $dp (loop $lp
          (br_if $dp (i32.ge_s (local.get $j) (local.get $Tk)))
          (f32.store (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2)))
            (if (result f32) (i32.le_s (local.get $j) (local.get $last))
              (then (f32.div (f32.load (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))))
                (local.get $z)))
              (else (f32.const 0))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $lp)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $li)))
      ;; out_i = Σ_{j≤last} p_ij·v_j for every query i, the keys up to its last unmasked one: the
      ;; reference's matmul over every key gives the same bits (the masked +0 terms add nothing; see $wsums)
      (call $wsums
        (i32.add (local.get $p) (i32.shl (i32.mul (i32.mul (local.get $u) (local.get $Tq)) (local.get $Tk))
          (i32.const 2)))
        (local.get $Tk)
        (i32.add (local.get $v) (i32.shl (i32.add (i32.mul (i32.mul (local.get $b) (local.get $Tk)) (local.get $kW))
          (i32.mul (local.get $g) (local.get $D))) (i32.const 2)))
        (local.get $kW) (local.get $Tk) (local.get $D)
        (i32.add (local.get $out) (i32.shl (i32.add (i32.mul (i32.mul (local.get $b) (local.get $Tq))
          (local.get $qW)) (i32.mul (local.get $h) (local.get $D))) (i32.const 2)))
        (local.get $qW) (local.get $Tq) (i32.sub (local.get $Tk) (local.get $Tq)))
      (local.set $u (i32.add (local.get $u) (i32.const 1)))
      (br $lu))))

  ;; Attention backward (Tq = Tk = T) for units u in [lo, hi), u = b·H + h (kernels/attention.ts
  ;; attentionBackward). Parameter block: dOut q k v p dq dkParts dvParts scratch T H KVH D scratchPerThread.
  ;; dq gets this head's columns; dkParts/dvParts [B, H, T, D] get the head's own parts, which the caller adds
  ;; into dk and dv group by group in ascending head order. Scratch per job: vT [D, T], ds [T, T], then dsT
  ;; and pT [T, T] (ds and the head's probabilities transposed, so that the sums over t of dk and dv read
  ;; their weights contiguously; the order of every sum is unchanged).
  (func (export "attention_backward") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $dO i32) (local $q i32) (local $k i32) (local $v i32) (local $p i32) (local $dq i32)
    (local $dkp i32) (local $dvp i32) (local $vT i32) (local $ds i32)
    (local $T i32) (local $H i32) (local $KVH i32) (local $D i32)
    (local $u i32) (local $b i32) (local $h i32) (local $g i32) (local $i i32) (local $j i32)
    (local $qW i32) (local $kW i32) (local $ph i32) (local $prow i32) (local $srow i32)
    (local $qh i32) (local $doh i32) (local $kg i32) (local $parts i32) (local $dsT i32) (local $pT i32)
    (local $sigma f32) (local $rho f32) (local $pij f32)
    (local.set $dO (call $arg (local.get $at) (i32.const 0)))
    (local.set $q (call $arg (local.get $at) (i32.const 1)))
    (local.set $k (call $arg (local.get $at) (i32.const 2)))
    (local.set $v (call $arg (local.get $at) (i32.const 3)))
    (local.set $p (call $arg (local.get $at) (i32.const 4)))
    (local.set $dq (call $arg (local.get $at) (i32.const 5)))
    (local.set $dkp (call $arg (local.get $at) (i32.const 6)))
    (local.set $dvp (call $arg (local.get $at) (i32.const 7)))
    (local.set $T (call $arg (local.get $at) (i32.const 9)))
    (local.set $H (call $arg (local.get $at) (i32.const 10)))
    (local.set $KVH (call $arg (local.get $at) (i32.const 11)))
    (local.set $D (call $arg (local.get $at) (i32.const 12)))
    (local.set $vT (i32.add (call $arg (local.get $at) (i32.const 8))
      (i32.mul (local.get $part) (call $arg (local.get $at) (i32.const 13)))))
    (local.set $ds (i32.add (local.get $vT) (i32.shl (i32.mul (local.get $D) (local.get $T)) (i32.const 2))))
    (local.set $dsT (i32.add (local.get $ds) (i32.shl (i32.mul (local.get $T) (local.get $T)) (i32.const 2))))
    (local.set $pT (i32.add (local.get $dsT) (i32.shl (i32.mul (local.get $T) (local.get $T)) (i32.const 2))))
    (local.set $qW (i32.mul (local.get $H) (local.get $D)))
    (local.set $kW (i32.mul (local.get $KVH) (local.get $D)))
    (local.set $sigma (f32.demote_f64 (f64.div (f64.const 1) (f64.sqrt (f64.convert_i32_s (local.get $D))))))
    (local.set $u (local.get $lo))
    (block $du (loop $lu
      (br_if $du (i32.ge_u (local.get $u) (local.get $hi)))
      (local.set $b (i32.div_u (local.get $u) (local.get $H)))
      (local.set $h (i32.rem_u (local.get $u) (local.get $H)))
      (local.set $g (i32.div_u (local.get $h) (i32.div_u (local.get $H) (local.get $KVH))))
      (local.set $qh (i32.add (local.get $q) (i32.shl (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T))
        (local.get $qW)) (i32.mul (local.get $h) (local.get $D))) (i32.const 2))))
      (local.set $doh (i32.add (local.get $dO) (i32.sub (local.get $qh) (local.get $q))))
      (local.set $kg (i32.add (local.get $k) (i32.shl (i32.add (i32.mul (i32.mul (local.get $b) (local.get $T))
        (local.get $kW)) (i32.mul (local.get $g) (local.get $D))) (i32.const 2))))
      (local.set $ph (i32.add (local.get $p) (i32.shl (i32.mul (i32.mul (local.get $u) (local.get $T))
        (local.get $T)) (i32.const 2))))
      (local.set $parts (i32.shl (i32.mul (i32.mul (local.get $u) (local.get $T)) (local.get $D)) (i32.const 2)))
      (call $transpose (i32.add (local.get $v) (i32.sub (local.get $kg) (local.get $k)))
        (local.get $kW) (local.get $T) (local.get $D) (local.get $vT))
      ;; ds_ij = fround(fround(p_ij·(dp_ij − ρ_i))·σ) for j ≤ i, +0 above; dp_ij = Σ_d dO_id·v_jd
      (local.set $i (i32.const 0))
      (block $di (loop $li
        (br_if $di (i32.ge_u (local.get $i) (local.get $T)))
        (local.set $prow (i32.add (local.get $ph) (i32.shl (i32.mul (local.get $i) (local.get $T)) (i32.const 2))))
        (local.set $srow (i32.add (local.get $ds) (i32.shl (i32.mul (local.get $i) (local.get $T)) (i32.const 2))))
        (call $dots (i32.add (local.get $doh) (i32.shl (i32.mul (local.get $i) (local.get $qW)) (i32.const 2)))
          (local.get $vT) (local.get $T) (local.get $D) (i32.add (local.get $i) (i32.const 1)) (local.get $srow))
        (local.set $rho (f32.const 0))
        (local.set $j (i32.const 0))
        (block $dr (loop $lr
          (br_if $dr (i32.gt_u (local.get $j) (local.get $i)))
          (local.set $rho (f32.add (local.get $rho) (f32.mul
            (f32.load (i32.add (local.get $prow) (i32.shl (local.get $j) (i32.const 2))))
            (f32.load (i32.add (local.get $srow) (i32.shl (local.get $j) (i32.const 2)))))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $lr)))
        (local.set $j (i32.const 0))
        (block $dd (loop $ld
          (br_if $dd (i32.ge_u (local.get $j) (local.get $T)))
          (if (i32.le_u (local.get $j) (local.get $i))
            (then
              (local.set $pij (f32.load (i32.add (local.get $prow) (i32.shl (local.get $j) (i32.const 2)))))
              (f32.store (i32.add (local.get $srow) (i32.shl (local.get $j) (i32.const 2)))
                (f32.mul (f32.mul (local.get $pij) (f32.sub
                  (f32.load (i32.add (local.get $srow) (i32.shl (local.get $j) (i32.const 2))))
                  (local.get $rho))) (local.get $sigma))))
            (else (f32.store (i32.add (local.get $srow) (i32.shl (local.get $j) (i32.const 2))) (f32.const 0))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br $ld)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $li)))
      (call $transpose (local.get $ds) (local.get $T) (local.get $T) (local.get $T) (local.get $dsT))
      (call $transpose (local.get $ph) (local.get $T) (local.get $T) (local.get $T) (local.get $pT))
      ;; dq_i = Σ_j ds_ij·k_j (every j)
      (call $wsums (local.get $ds) (local.get $T) (local.get $kg) (local.get $kW) (local.get $T) (local.get $D)
        (i32.add (local.get $dq) (i32.sub (local.get $qh) (local.get $q))) (local.get $qW) (local.get $T) (local.get $T))
      ;; dk part_i = Σ_t ds_ti·q_t; dv part_i = Σ_t p_ti·dO_t (every t; the weights are row i of dsT, pT)
      (call $wsums (local.get $dsT) (local.get $T) (local.get $qh) (local.get $qW) (local.get $T) (local.get $D)
        (i32.add (local.get $dkp) (local.get $parts)) (local.get $D) (local.get $T) (local.get $T))
      (call $wsums (local.get $pT) (local.get $T) (local.get $doh) (local.get $qW) (local.get $T) (local.get $D)
        (i32.add (local.get $dvp) (local.get $parts)) (local.get $D) (local.get $T) (local.get $T))
      (local.set $u (i32.add (local.get $u) (i32.const 1)))
      (br $lu))))

  ;; The head's vocabulary, elements [lo, hi) of logits z [N, V] (kernels/cross_entropy.ts rowExp):
  ;; e = expf(fround(z − m_n)) with m_n the row's maximum. Parameter block: z e m V (m: f32 [N]).
  (func (export "vocab_exp") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $z i32) (local $e i32) (local $mp i32) (local $V i32) (local $x i32) (local $n i32) (local $end i32)
    (local $m f32)
    (local.set $z (call $arg (local.get $at) (i32.const 0)))
    (local.set $e (call $arg (local.get $at) (i32.const 1)))
    (local.set $mp (call $arg (local.get $at) (i32.const 2)))
    (local.set $V (call $arg (local.get $at) (i32.const 3)))
    (local.set $x (local.get $lo))
    (block $dx (loop $lx
      (br_if $dx (i32.ge_u (local.get $x) (local.get $hi)))
      (local.set $n (i32.div_u (local.get $x) (local.get $V)))
      (local.set $m (f32.load (i32.add (local.get $mp) (i32.shl (local.get $n) (i32.const 2)))))
      (local.set $end (i32.mul (i32.add (local.get $n) (i32.const 1)) (local.get $V)))
      (if (i32.gt_u (local.get $end) (local.get $hi)) (then (local.set $end (local.get $hi))))
      (block $dv (loop $lv
        (br_if $dv (i32.gt_u (i32.add (local.get $x) (i32.const 4)) (local.get $end)))
        (v128.store (i32.add (local.get $e) (i32.shl (local.get $x) (i32.const 2)))
          (call $expf4 (f32x4.sub (v128.load (i32.add (local.get $z) (i32.shl (local.get $x) (i32.const 2))))
            (f32x4.splat (local.get $m)))))
        (local.set $x (i32.add (local.get $x) (i32.const 4)))
        (br $lv)))
      (block $dr (loop $lr
        (br_if $dr (i32.ge_u (local.get $x) (local.get $end)))
        (f32.store (i32.add (local.get $e) (i32.shl (local.get $x) (i32.const 2)))
          (call $expf (f32.sub (f32.load (i32.add (local.get $z) (i32.shl (local.get $x) (i32.const 2))))
            (local.get $m))))
        (local.set $x (i32.add (local.get $x) (i32.const 1)))
        (br $lr)))
      (br $lx))))

  ;; The head's logit gradient, elements [lo, hi) of [N, V] (kernels/cross_entropy.ts rowGradient):
  ;; dz = fround(fround(fround(e / Z_n) − [j = y_n]) / L) for a labelled row, +0 for an ignored one (y_n < 0).
  ;; Parameter block: e dz sums labels V L (sums: f32 [N], labels: i32 [N]); dz may be e (in place).
  (func (export "vocab_gradient") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $e i32) (local $dz i32) (local $sp i32) (local $yp i32) (local $V i32) (local $L f32)
    (local $x i32) (local $n i32) (local $end i32) (local $y i32) (local $j i32) (local $Z f32)
    (local.set $e (call $arg (local.get $at) (i32.const 0)))
    (local.set $dz (call $arg (local.get $at) (i32.const 1)))
    (local.set $sp (call $arg (local.get $at) (i32.const 2)))
    (local.set $yp (call $arg (local.get $at) (i32.const 3)))
    (local.set $V (call $arg (local.get $at) (i32.const 4)))
    (local.set $L (f32.convert_i32_s (call $arg (local.get $at) (i32.const 5))))
    (local.set $x (local.get $lo))
    (block $dx (loop $lx
      (br_if $dx (i32.ge_u (local.get $x) (local.get $hi)))
      (local.set $n (i32.div_u (local.get $x) (local.get $V)))
      (local.set $Z (f32.load (i32.add (local.get $sp) (i32.shl (local.get $n) (i32.const 2)))))
      (local.set $y (i32.load (i32.add (local.get $yp) (i32.shl (local.get $n) (i32.const 2)))))
      (local.set $end (i32.mul (i32.add (local.get $n) (i32.const 1)) (local.get $V)))
      (if (i32.gt_u (local.get $end) (local.get $hi)) (then (local.set $end (local.get $hi))))
      (block $dr (loop $lr
        (br_if $dr (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $j (i32.sub (local.get $x) (i32.mul (local.get $n) (local.get $V))))
        (f32.store (i32.add (local.get $dz) (i32.shl (local.get $x) (i32.const 2)))
          (if (result f32) (i32.lt_s (local.get $y) (i32.const 0))
            (then (f32.const 0))
            (else (f32.div
              (f32.sub (f32.div (f32.load (i32.add (local.get $e) (i32.shl (local.get $x) (i32.const 2))))
                (local.get $Z))
                (if (result f32) (i32.eq (local.get $j) (local.get $y)) (then (f32.const 1)) (else (f32.const 0))))
              (local.get $L)))))
        (local.set $x (i32.add (local.get $x) (i32.const 1)))
        (br $lr)))
      (br $lx))))

  ;; The MLP's gated product of one element at byte offset $o (see "silu").
  (func $silu1 (param $g i32) (param $u i32) (param $h i32) (param $o i32)
    (local $gi f64)
    (local.set $gi (f64.promote_f32 (f32.load (i32.add (local.get $g) (local.get $o)))))
    (f32.store (i32.add (local.get $h) (local.get $o))
      (f32.demote_f64 (f64.mul
        (f64.promote_f32 (f32.demote_f64 (f64.mul (local.get $gi)
          (f64.div (f64.const 1) (f64.add (f64.const 1) (call $exp64 (f64.neg (local.get $gi))))))))
        (f64.promote_f32 (f32.load (i32.add (local.get $u) (local.get $o))))))))

  ;; fround(g·sigmoid(g)) of two float64 lanes (promoted float32) whose −g is in [-707, 709], as a float64x2
  ;; of the float32 values (each lane exactly $silu1's operations up to the product with u).
  (func $gsig2 (param $g v128) (result v128)
    (f64x2.promote_low_f32x4 (f32x4.demote_f64x2_zero (f64x2.mul (local.get $g)
      (f64x2.div (f64x2.splat (f64.const 1))
        (f64x2.add (f64x2.splat (f64.const 1)) (call $exp64x2 (f64x2.neg (local.get $g)))))))))

  ;; The MLP's gated product, elements [lo, hi) (kernels/mlp.ts mlpForward):
  ;; h = fround(fround(g · sigmoid(g)) · u) with sigmoid(g) = 1 / (1 + exp64(−g)) in float64, the product
  ;; g · sigmoid(g) in float64 rounded once to float32, then times u in float64 (exact) rounded once.
  ;; Elementwise, so any split gives the same bits. Parameter block: g u h (f32 arrays; h may be g or u).
  ;; Four elements at a time where every g of the four is in [-709, 707], so that −g is in $exp64x2's range
  ;; (two $exp64x2 side by side; the
  ;; last step is f32x4.mul: a float32 product computed exactly in float64 and rounded once is the float32
  ;; product), else and for the last hi − lo mod 4 elements one by one through $silu1.
  (func (export "silu") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $g i32) (local $u i32) (local $h i32) (local $x i32) (local $o i32) (local $gv v128)
    (local.set $g (call $arg (local.get $at) (i32.const 0)))
    (local.set $u (call $arg (local.get $at) (i32.const 1)))
    (local.set $h (call $arg (local.get $at) (i32.const 2)))
    (local.set $x (local.get $lo))
    (block $d4 (loop $l4
      (br_if $d4 (i32.gt_u (i32.add (local.get $x) (i32.const 4)) (local.get $hi)))
      (local.set $o (i32.shl (local.get $x) (i32.const 2)))
      (local.set $gv (v128.load (i32.add (local.get $g) (local.get $o))))
      (if (i32x4.all_true (v128.and
          (f32x4.ge (local.get $gv) (f32x4.splat (f32.const -709)))
          (f32x4.le (local.get $gv) (f32x4.splat (f32.const 707)))))
        (then
          (v128.store (i32.add (local.get $h) (local.get $o)) (f32x4.mul
            (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
              (f32x4.demote_f64x2_zero (call $gsig2 (f64x2.promote_low_f32x4 (local.get $gv))))
              (f32x4.demote_f64x2_zero (call $gsig2 (f64x2.promote_low_f32x4
                (i8x16.shuffle 8 9 10 11 12 13 14 15 8 9 10 11 12 13 14 15 (local.get $gv) (local.get $gv))))))
            (v128.load (i32.add (local.get $u) (local.get $o))))))
        (else
          (call $silu1 (local.get $g) (local.get $u) (local.get $h) (local.get $o))
          (call $silu1 (local.get $g) (local.get $u) (local.get $h) (i32.add (local.get $o) (i32.const 4)))
          (call $silu1 (local.get $g) (local.get $u) (local.get $h) (i32.add (local.get $o) (i32.const 8)))
          (call $silu1 (local.get $g) (local.get $u) (local.get $h) (i32.add (local.get $o) (i32.const 12)))))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (br $l4)))
    (block $dx (loop $lx
      (br_if $dx (i32.ge_u (local.get $x) (local.get $hi)))
      (call $silu1 (local.get $g) (local.get $u) (local.get $h) (i32.shl (local.get $x) (i32.const 2)))
      (local.set $x (i32.add (local.get $x) (i32.const 1)))
      (br $lx))))

  ;; The MLP's gated product backward, elements [lo, hi) (kernels/mlp.ts mlpBackward): with s = sigmoid(g) as
  ;; above, a = fround(g·s), du = fround(dh·a), da = fround(dh·u), dg = fround(da·fround(s·(1 + g·(1 − s)))),
  ;; every product and sum in float64 as in the reference. Elementwise, so any split gives the same bits.
  ;; Parameter block: g u dh du dg (f32 arrays; du may be dh).
  (func (export "silu_backward") (param $at i32) (param $part i32) (param $lo i32) (param $hi i32)
    (local $g i32) (local $u i32) (local $dh i32) (local $du i32) (local $dg i32) (local $x i32) (local $o i32)
    (local $gi f64) (local $s f64) (local $d f64)
    (local.set $g (call $arg (local.get $at) (i32.const 0)))
    (local.set $u (call $arg (local.get $at) (i32.const 1)))
    (local.set $dh (call $arg (local.get $at) (i32.const 2)))
    (local.set $du (call $arg (local.get $at) (i32.const 3)))
    (local.set $dg (call $arg (local.get $at) (i32.const 4)))
    (local.set $x (local.get $lo))
    (block $dx (loop $lx
      (br_if $dx (i32.ge_u (local.get $x) (local.get $hi)))
      (local.set $o (i32.shl (local.get $x) (i32.const 2)))
      (local.set $gi (f64.promote_f32 (f32.load (i32.add (local.get $g) (local.get $o)))))
      (local.set $d (f64.promote_f32 (f32.load (i32.add (local.get $dh) (local.get $o)))))
      (local.set $s (f64.div (f64.const 1) (f64.add (f64.const 1) (call $exp64 (f64.neg (local.get $gi))))))
      ;; dg first: du may overwrite dh
      (f32.store (i32.add (local.get $dg) (local.get $o))
        (f32.demote_f64 (f64.mul
          (f64.promote_f32 (f32.demote_f64 (f64.mul (local.get $d)
            (f64.promote_f32 (f32.load (i32.add (local.get $u) (local.get $o)))))))
          (f64.promote_f32 (f32.demote_f64 (f64.mul (local.get $s)
            (f64.add (f64.const 1) (f64.mul (local.get $gi) (f64.sub (f64.const 1) (local.get $s))))))))))
      (f32.store (i32.add (local.get $du) (local.get $o))
        (f32.demote_f64 (f64.mul (local.get $d)
          (f64.promote_f32 (f32.demote_f64 (f64.mul (local.get $gi) (local.get $s)))))))
      (local.set $x (i32.add (local.get $x) (i32.const 1)))
      (br $lx))))
;; --- One row of a decoded token's elementwise steps (kernels/decode_fast.ts), each the TypeScript definition's
;; operations in its order, so the bits are its bits. Each returns 1 when every value it wrote is finite.

  ;; y = rmsnorm(x) of one row of C values (kernels/rmsnorm.ts normalise): ss = Σ fround(x_c²) in float32 from
  ;; +0, c ascending; r = rsqrtf(fround(fround(ss / C) + eps)) with the division and the reciprocal square root
  ;; in float64 rounded once (Math.fround of the float64 result, as there); y_c = fround(w_c · fround(x_c · r)).
  ;; Returns 0 when a y is not finite, 2 when ss overflows (the caller then lets the definition raise its error).
  (func (export "rmsnorm_row") (param $x i32) (param $w i32) (param $y i32) (param $C i32) (param $eps f32)
    (result i32)
    (local $c i32) (local $o i32) (local $ss f32) (local $v f32) (local $r f32) (local $ok i32)
    (local.set $ss (f32.const 0))
    (local.set $c (i32.const 0))
    (block $ds (loop $ls
      (br_if $ds (i32.ge_u (local.get $c) (local.get $C)))
      (local.set $v (f32.load (i32.add (local.get $x) (i32.shl (local.get $c) (i32.const 2)))))
      (local.set $ss (f32.add (local.get $ss) (f32.mul (local.get $v) (local.get $v))))
      (local.set $c (i32.add (local.get $c) (i32.const 1)))
      (br $ls)))
    (if (f32.eq (local.get $ss) (f32.const inf)) (then (return (i32.const 2))))
    (local.set $r (f32.demote_f64 (f64.div (f64.const 1) (f64.sqrt (f64.promote_f32
      (f32.demote_f64 (f64.add
        (f64.promote_f32 (f32.demote_f64 (f64.div (f64.promote_f32 (local.get $ss)) (f64.convert_i32_u (local.get $C)))))
        (f64.promote_f32 (local.get $eps)))))))))
    (local.set $ok (i32.const 1))
    (local.set $c (i32.const 0))
    (block $dy (loop $ly
      (br_if $dy (i32.ge_u (local.get $c) (local.get $C)))
      (local.set $o (i32.shl (local.get $c) (i32.const 2)))
      (local.set $v (f32.mul (f32.load (i32.add (local.get $w) (local.get $o)))
        (f32.mul (f32.load (i32.add (local.get $x) (local.get $o))) (local.get $r))))
      (f32.store (i32.add (local.get $y) (local.get $o)) (local.get $v))
      (if (f32.ne (f32.sub (local.get $v) (local.get $v)) (f32.const 0)) (then (local.set $ok (i32.const 0))))
      (local.set $c (i32.add (local.get $c) (i32.const 1)))
      (br $ly)))
    (local.get $ok))

  ;; out = a + b over n floats (kernels/residual.ts addForward: fround(a_i + b_i), the float32 sum); out may be
  ;; a or b. Four at a time, then one by one.
  (func (export "add_row") (param $a i32) (param $b i32) (param $out i32) (param $n i32) (result i32)
    (local $i i32) (local $o i32) (local $v v128) (local $bad v128) (local $f f32)
    (local.set $bad (v128.const i32x4 0 0 0 0))
    (local.set $i (i32.const 0))
    (block $d4 (loop $l4
      (br_if $d4 (i32.gt_u (i32.add (local.get $i) (i32.const 4)) (local.get $n)))
      (local.set $o (i32.shl (local.get $i) (i32.const 2)))
      (local.set $v (f32x4.add (v128.load (i32.add (local.get $a) (local.get $o)))
        (v128.load (i32.add (local.get $b) (local.get $o)))))
      (v128.store (i32.add (local.get $out) (local.get $o)) (local.get $v))
      ;; v − v is 0 for a finite lane, NaN otherwise: NaN ≠ 0 marks the lane
      (local.set $bad (v128.or (local.get $bad)
        (f32x4.ne (f32x4.sub (local.get $v) (local.get $v)) (v128.const f32x4 0 0 0 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $l4)))
    (block $d1 (loop $l1
      (br_if $d1 (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $o (i32.shl (local.get $i) (i32.const 2)))
      (local.set $f (f32.add (f32.load (i32.add (local.get $a) (local.get $o)))
        (f32.load (i32.add (local.get $b) (local.get $o)))))
      (f32.store (i32.add (local.get $out) (local.get $o)) (local.get $f))
      (if (f32.ne (f32.sub (local.get $f) (local.get $f)) (f32.const 0))
        (then (local.set $bad (v128.const i32x4 -1 0 0 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l1)))
    (i32.eqz (v128.any_true (local.get $bad))))

  ;; The rotary embedding of one position, in place (kernels/rotary.ts rotaryForward): for each of `heads`
  ;; heads of width D = 2h and i < h, with c = cos[i], s = sin[i] (the tables' row of the position),
  ;; x_i ← fround(fround(x_i·c) − fround(x_{i+h}·s)), x_{i+h} ← fround(fround(x_{i+h}·c) + fround(x_i·s)),
  ;; both from the old values. Four i at a time (h is a multiple of 4 here; the caller checks), in place.
  (func (export "rotary_row") (param $x i32) (param $cos i32) (param $sin i32) (param $heads i32) (param $D i32)
    (local $g i32) (local $i i32) (local $h i32) (local $p1 i32) (local $p2 i32) (local $o i32)
    (local $x1 v128) (local $x2 v128) (local $c v128) (local $s v128)
    (local.set $h (i32.shr_u (local.get $D) (i32.const 1)))
    (local.set $g (i32.const 0))
    (block $dg (loop $lg
      (br_if $dg (i32.ge_u (local.get $g) (local.get $heads)))
      (local.set $i (i32.const 0))
      (block $di (loop $li
        (br_if $di (i32.ge_u (local.get $i) (local.get $h)))
        (local.set $o (i32.shl (local.get $i) (i32.const 2)))
        (local.set $p1 (i32.add (local.get $x)
          (i32.shl (i32.add (i32.mul (local.get $g) (local.get $D)) (local.get $i)) (i32.const 2))))
        (local.set $p2 (i32.add (local.get $p1) (i32.shl (local.get $h) (i32.const 2))))
        (local.set $x1 (v128.load (local.get $p1)))
        (local.set $x2 (v128.load (local.get $p2)))
        (local.set $c (v128.load (i32.add (local.get $cos) (local.get $o))))
        (local.set $s (v128.load (i32.add (local.get $sin) (local.get $o))))
        (v128.store (local.get $p1) (f32x4.sub (f32x4.mul (local.get $x1) (local.get $c))
          (f32x4.mul (local.get $x2) (local.get $s))))
        (v128.store (local.get $p2) (f32x4.add (f32x4.mul (local.get $x2) (local.get $c))
          (f32x4.mul (local.get $x1) (local.get $s))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $li)))
      (local.set $g (i32.add (local.get $g) (i32.const 1)))
      (br $lg))))
)
