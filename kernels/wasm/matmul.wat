;; Deterministic float32 matmul, WebAssembly SIMD (f32x4.mul then f32x4.add: never a fused multiply-add,
;; never relaxed SIMD). Bit-identical to `matmulReference` in kernels/matmul.ts, which is the definition:
;;   C[i,j] = fround(...fround(fround(+0 + fround(A[i,0]*B[0,j])) + fround(A[i,1]*B[1,j]))... ), k ascending.
;; Vectorised across output columns j: lane l of an accumulator holds C[i, j0+l], and every accumulator is
;; updated once per k in ascending k, so each output element sees exactly the reference's operations.
;;
;; Blocking: B is packed one panel of 12 columns at a time ([K][12], zero-padded past N), A is packed once
;; ([ceil(M/2)][K][2], zero-padded past M); a 2-row × 12-column tile keeps 6 f32x4 accumulators, 3 B vectors
;; and 1 splatted A value in registers. Padded rows and columns compute on zeros and are never stored.
;; Assembled by `deno task build:wasm` (npm:wabt) into matmul.wasm and matmul_wasm_bytes.ts.
;;
;; All pointers are byte offsets into the exported memory; the caller (matmul_wasm.ts) lays out the buffers
;; and grows the memory. The flags aT / bT are 1 when A is stored [K,M] / B is stored [N,K].
(module
  (memory (export "memory") 1)

  ;; Tile shape, exported so the loader sizes its buffers from the module itself.
  (global $R i32 (i32.const 2))
  (global $W i32 (i32.const 12))
  (export "tile_rows" (global $R))
  (export "tile_cols" (global $W))

  ;; dst[ib][k][r] = A[2*ib + r, k] for ib < ceil(M/2), k < K, r < 2; 0 where 2*ib + r >= M.
  (func $pack_a (param $src i32) (param $dst i32) (param $M i32) (param $K i32) (param $aT i32)
    (local $i0 i32) (local $k i32) (local $r i32) (local $i i32) (local $v f32)
    (local.set $i0 (i32.const 0))
    (block $done_i (loop $next_i
      (br_if $done_i (i32.ge_u (local.get $i0) (local.get $M)))
      (local.set $k (i32.const 0))
      (block $done_k (loop $next_k
        (br_if $done_k (i32.ge_u (local.get $k) (local.get $K)))
        (local.set $r (i32.const 0))
        (block $done_r (loop $next_r
          (br_if $done_r (i32.ge_u (local.get $r) (i32.const 2)))
          (local.set $i (i32.add (local.get $i0) (local.get $r)))
          (local.set $v (f32.const 0))
          (if (i32.lt_u (local.get $i) (local.get $M))
            (then (local.set $v (f32.load (i32.add (local.get $src) (i32.shl
              (if (result i32) (local.get $aT)
                (then (i32.add (i32.mul (local.get $k) (local.get $M)) (local.get $i)))
                (else (i32.add (i32.mul (local.get $i) (local.get $K)) (local.get $k))))
              (i32.const 2)))))))
          (f32.store (local.get $dst) (local.get $v))
          (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
          (local.set $r (i32.add (local.get $r) (i32.const 1)))
          (br $next_r)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next_k)))
      (local.set $i0 (i32.add (local.get $i0) (i32.const 2)))
      (br $next_i)))
  )

  ;; dst[k][c] = B[k, j0 + c] for k < K, c < 12; 0 where j0 + c >= N. A full panel of a row-major B is
  ;; copied with three v128 moves per k; anything else element by element.
  (func $pack_b (param $src i32) (param $dst i32) (param $K i32) (param $N i32) (param $j0 i32) (param $bT i32)
    (local $k i32) (local $c i32) (local $j i32) (local $v f32) (local $p i32)
    (local.set $k (i32.const 0))
    (if (i32.and (i32.eqz (local.get $bT)) (i32.le_u (i32.add (local.get $j0) (i32.const 12)) (local.get $N)))
      (then
        (local.set $p (i32.add (local.get $src) (i32.shl (local.get $j0) (i32.const 2))))
        (block $done (loop $next
          (br_if $done (i32.ge_u (local.get $k) (local.get $K)))
          (v128.store offset=0 (local.get $dst) (v128.load offset=0 (local.get $p)))
          (v128.store offset=16 (local.get $dst) (v128.load offset=16 (local.get $p)))
          (v128.store offset=32 (local.get $dst) (v128.load offset=32 (local.get $p)))
          (local.set $dst (i32.add (local.get $dst) (i32.const 48)))
          (local.set $p (i32.add (local.get $p) (i32.shl (local.get $N) (i32.const 2))))
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br $next)))
        (return)))
    (block $done_k (loop $next_k
      (br_if $done_k (i32.ge_u (local.get $k) (local.get $K)))
      (local.set $c (i32.const 0))
      (block $done_c (loop $next_c
        (br_if $done_c (i32.ge_u (local.get $c) (i32.const 12)))
        (local.set $j (i32.add (local.get $j0) (local.get $c)))
        (local.set $v (f32.const 0))
        (if (i32.lt_u (local.get $j) (local.get $N))
          (then (local.set $v (f32.load (i32.add (local.get $src) (i32.shl
            (if (result i32) (local.get $bT)
              (then (i32.add (i32.mul (local.get $j) (local.get $K)) (local.get $k)))
              (else (i32.add (i32.mul (local.get $k) (local.get $N)) (local.get $j))))
            (i32.const 2)))))))
        (f32.store (local.get $dst) (local.get $v))
        (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
        (local.set $c (i32.add (local.get $c) (i32.const 1)))
        (br $next_c)))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br $next_k)))
  )

  ;; C[M,N] (row-major at $c) = A·B. $pa holds ceil(M/2)*2*K floats, $pb 12*K floats, $scr 24 floats.
  (func (export "matmul") (param $a i32) (param $b i32) (param $c i32) (param $pa i32) (param $pb i32)
    (param $scr i32) (param $M i32) (param $K i32) (param $N i32) (param $aT i32) (param $bT i32)
    (local $j0 i32) (local $i0 i32) (local $pak i32) (local $pbk i32) (local $end i32) (local $row i32)
    (local $r i32) (local $q i32) (local $nr i32) (local $nc i32)
    (local $x v128) (local $b0 v128) (local $b1 v128) (local $b2 v128)
    (local $c00 v128) (local $c01 v128) (local $c02 v128) (local $c10 v128) (local $c11 v128) (local $c12 v128)
    (call $pack_a (local.get $a) (local.get $pa) (local.get $M) (local.get $K) (local.get $aT))
    (local.set $j0 (i32.const 0))
    (block $done_j (loop $next_j
      (br_if $done_j (i32.ge_u (local.get $j0) (local.get $N)))
      (call $pack_b (local.get $b) (local.get $pb) (local.get $K) (local.get $N) (local.get $j0) (local.get $bT))
      (local.set $i0 (i32.const 0))
      (local.set $pak (local.get $pa))
      (block $done_i (loop $next_i
        (br_if $done_i (i32.ge_u (local.get $i0) (local.get $M)))
        ;; acc = +0 for the 2 × 12 outputs C[i0..i0+1, j0..j0+11].
        (local.set $c00 (v128.const i32x4 0 0 0 0))
        (local.set $c01 (v128.const i32x4 0 0 0 0))
        (local.set $c02 (v128.const i32x4 0 0 0 0))
        (local.set $c10 (v128.const i32x4 0 0 0 0))
        (local.set $c11 (v128.const i32x4 0 0 0 0))
        (local.set $c12 (v128.const i32x4 0 0 0 0))
        (local.set $pbk (local.get $pb))
        (local.set $end (i32.add (local.get $pak) (i32.shl (local.get $K) (i32.const 3))))
        ;; for k = 0 .. K-1 (ascending): acc = fround(acc + fround(A[i,k] * B[k,j])), lane-wise.
        (block $done_k (loop $next_k
          (br_if $done_k (i32.ge_u (local.get $pak) (local.get $end)))
          (local.set $b0 (v128.load offset=0 (local.get $pbk)))
          (local.set $b1 (v128.load offset=16 (local.get $pbk)))
          (local.set $b2 (v128.load offset=32 (local.get $pbk)))
          (local.set $x (v128.load32_splat offset=0 (local.get $pak)))
          (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $c02 (f32x4.add (local.get $c02) (f32x4.mul (local.get $x) (local.get $b2))))
          (local.set $x (v128.load32_splat offset=4 (local.get $pak)))
          (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $c12 (f32x4.add (local.get $c12) (f32x4.mul (local.get $x) (local.get $b2))))
          (local.set $pak (i32.add (local.get $pak) (i32.const 8)))
          (local.set $pbk (i32.add (local.get $pbk) (i32.const 48)))
          (br $next_k)))
        ;; $pak now points at the next row pair's packed A. Store the tile: whole rows of 12 when the tile
        ;; is inside C, otherwise through the scratch area, only the elements inside C.
        (if (i32.and (i32.le_u (i32.add (local.get $i0) (i32.const 2)) (local.get $M))
                     (i32.le_u (i32.add (local.get $j0) (i32.const 12)) (local.get $N)))
          (then
            (local.set $row (i32.add (local.get $c)
              (i32.shl (i32.add (i32.mul (local.get $i0) (local.get $N)) (local.get $j0)) (i32.const 2))))
            (v128.store offset=0 (local.get $row) (local.get $c00))
            (v128.store offset=16 (local.get $row) (local.get $c01))
            (v128.store offset=32 (local.get $row) (local.get $c02))
            (local.set $row (i32.add (local.get $row) (i32.shl (local.get $N) (i32.const 2))))
            (v128.store offset=0 (local.get $row) (local.get $c10))
            (v128.store offset=16 (local.get $row) (local.get $c11))
            (v128.store offset=32 (local.get $row) (local.get $c12)))
          (else
            (v128.store offset=0 (local.get $scr) (local.get $c00))
            (v128.store offset=16 (local.get $scr) (local.get $c01))
            (v128.store offset=32 (local.get $scr) (local.get $c02))
            (v128.store offset=48 (local.get $scr) (local.get $c10))
            (v128.store offset=64 (local.get $scr) (local.get $c11))
            (v128.store offset=80 (local.get $scr) (local.get $c12))
            (local.set $nr (i32.sub (local.get $M) (local.get $i0)))
            (if (i32.gt_u (local.get $nr) (i32.const 2)) (then (local.set $nr (i32.const 2))))
            (local.set $nc (i32.sub (local.get $N) (local.get $j0)))
            (if (i32.gt_u (local.get $nc) (i32.const 12)) (then (local.set $nc (i32.const 12))))
            (local.set $r (i32.const 0))
            (block $done_r (loop $next_r
              (br_if $done_r (i32.ge_u (local.get $r) (local.get $nr)))
              (local.set $row (i32.add (local.get $c) (i32.shl
                (i32.add (i32.mul (i32.add (local.get $i0) (local.get $r)) (local.get $N)) (local.get $j0))
                (i32.const 2))))
              (local.set $q (i32.const 0))
              (block $done_q (loop $next_q
                (br_if $done_q (i32.ge_u (local.get $q) (local.get $nc)))
                (f32.store (i32.add (local.get $row) (i32.shl (local.get $q) (i32.const 2)))
                  (f32.load (i32.add (local.get $scr)
                    (i32.shl (i32.add (i32.mul (local.get $r) (i32.const 12)) (local.get $q)) (i32.const 2)))))
                (local.set $q (i32.add (local.get $q) (i32.const 1)))
                (br $next_q)))
              (local.set $r (i32.add (local.get $r) (i32.const 1)))
              (br $next_r)))))
        (local.set $i0 (i32.add (local.get $i0) (i32.const 2)))
        (br $next_i)))
      (local.set $j0 (i32.add (local.get $j0) (i32.const 12)))
      (br $next_j)))
  )
)
