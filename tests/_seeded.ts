/** A small seeded PRNG (xorshift32) for randomised tests: print the seed on failure to reproduce. */
export function seededRandom(
  seed: number,
): { u32(): number; below(n: number): number; bytes(n: number): Uint8Array } {
  let s = seed >>> 0 || 0x9e3779b9;
  const u32 = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  return {
    u32,
    below: (n) => u32() % n,
    bytes(n) {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = u32() & 0xff;
      return out;
    },
  };
}
