/**
 * An independent oracle of the serving gate (PROTOCOL §7): Python computes every document's target-weighted
 * mean exactly (integers over a common power of two, then one `fractions.Fraction`), `float()` rounds it once
 * (nearest, ties to even), q = floor(x·10^6) of the exact binary value, then S, Q, G and the inequality in
 * Python integers. It must agree with `decide`
 * (what `finish_evaluation` applies on the ledger) on 1,000 seeded random paired measurement sets of 32
 * documents per role with 1–4 windows each. Skipped with the reason when no Python 3 is found.
 */
import assert from "node:assert/strict";
import { toHexFloat } from "../../core/hex_float.ts";
import { decide, EVAL_DOCUMENTS, type Group, type GroupName, GROUPS } from "../../workflows/evaluation.ts";
import { seededRandom } from "../_seeded.ts";

const SCRIPT = `
import json, sys
from fractions import Fraction
from math import floor
cases = json.load(open(sys.argv[1]))
SHIFT = 1100  # every float64 is an integer multiple of 2^-1074, so x * 2^SHIFT is an exact integer
def scaled(x):
    n, d = x.as_integer_ratio()  # d is a power of two
    return n * (2**SHIFT // d)
def q(x):
    n, d = x.as_integer_ratio()
    return floor(Fraction(n * 10**6, d))
def doc_q(windows):
    num = sum(scaled(float.fromhex(l)) * t for l, t in windows)
    # float(Fraction) rounds the exact rational once, to nearest, ties to even.
    return q(float(Fraction(num, sum(t for _, t in windows) * 2**SHIFT)))
out = []
for case in cases:
    res = {}
    for role, margin in (("retention", 20000), ("fresh", -1000)):
        qs = {}
        for side in ("baseline", "candidate"):
            g = case["groups"][side + "_" + role]
            docs = [[] for _ in range(32)]
            for i, d in enumerate(case["layout"][role]):
                docs[d].append((g["losses"][i], g["targets"][i]))
            qs[side] = [doc_q(w) for w in docs]
        d = [c - b for b, c in zip(qs["baseline"], qs["candidate"])]
        n = len(d)
        S = sum(d)
        Q = n * sum(x * x for x in d) - S * S
        G = (margin - 2) * n - S
        res[role] = {"pass": G > 0 and G * G * 10**6 * (n - 1) > 2576**2 * Q, "S": str(S), "Q": str(Q), "G": str(G)}
    res["promoted"] = res["retention"]["pass"] and res["fresh"]["pass"]
    out.append(res)
json.dump(out, open(sys.argv[2], "w"))
`;

async function python(): Promise<string | null> {
  for (const cmd of ["python3", "python"]) {
    try {
      const o = await new Deno.Command(cmd, { args: ["--version"], stdout: "null", stderr: "null" }).output();
      if (o.success) return cmd;
    } catch {
      // not installed
    }
  }
  return null;
}

const PY = await python();

function randomCase(r: ReturnType<typeof seededRandom>) {
  const layout = { retention: [] as number[], fresh: [] as number[] };
  for (const role of ["retention", "fresh"] as const) {
    for (let d = 0; d < EVAL_DOCUMENTS; d++) {
      const k = 1 + r.below(4);
      for (let i = 0; i < k; i++) layout[role].push(d);
    }
  }
  // A common base loss per case; candidates shift by a random per-case amount with per-document noise, so both
  // passing and failing sets occur.
  const base = 1 + r.below(4000) / 1000;
  const shift = (r.below(4001) - 2000) / 100_000;
  const noise = r.below(3) === 0 ? 0 : r.below(2000) / 1_000_000;
  const groups = {} as Record<GroupName, Group>;
  for (const g of GROUPS) {
    const role = g.endsWith("retention") ? "retention" : "fresh";
    const n = layout[role].length;
    const losses: string[] = [], targets: number[] = [];
    for (let i = 0; i < n; i++) {
      const jitter = (r.u32() / 2 ** 32 - 0.5) * 2 * noise;
      const x = base + (g.startsWith("candidate") ? shift : 0) + jitter + (r.u32() / 2 ** 32) * 1e-9;
      losses.push(toHexFloat(Math.max(0, x)));
      targets.push(1 + r.below(128));
    }
    groups[g] = { losses, targets, pending: null };
  }
  return { layout, groups };
}

Deno.test({
  name: "the gate agrees with a Python fractions.Fraction oracle on 1,000 random paired measurement sets",
  ignore: PY === null,
  async fn() {
    const seed = 0x5eed12;
    const r = seededRandom(seed);
    const cases = Array.from({ length: 1000 }, () => randomCase(r));
    const dir = await Deno.makeTempDir({ prefix: "gate-oracle-" });
    try {
      await Deno.writeTextFile(`${dir}/in.json`, JSON.stringify(cases));
      await Deno.writeTextFile(`${dir}/gate.py`, SCRIPT);
      const o = await new Deno.Command(PY!, { args: [`${dir}/gate.py`, `${dir}/in.json`, `${dir}/out.json`] })
        .output();
      assert.equal(o.success, true, new TextDecoder().decode(o.stderr));
      const want = JSON.parse(await Deno.readTextFile(`${dir}/out.json`)) as unknown[];
      let promoted = 0;
      cases.forEach((c, i) => {
        const got = decide(c.layout, c.groups);
        const mine = { ...got.gate, promoted: got.promoted };
        assert.deepEqual(mine, want[i], `case ${i} (seed ${seed})`);
        if (got.promoted) promoted++;
      });
      // Both outcomes are exercised.
      assert.equal(promoted > 50 && promoted < 950, true, `${promoted} of 1,000 promoted`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
