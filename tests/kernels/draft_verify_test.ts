import assert from "node:assert/strict";
import { type Drafter, Q8Drafter } from "../../kernels/draft.ts";
import { generateDrafted } from "../../kernels/draft_verify.ts";
import { generate, type KvCache } from "../../kernels/generation.ts";
import type { Model } from "../../kernels/model.ts";
import { errorCode } from "./_gradcheck.ts";
import { lively } from "./_generation_fixture.ts";

function bits(x: Float32Array): number[] {
  return Array.from(new Uint32Array(x.slice().buffer));
}

const PROMPT = [5, 900, 17, 3001, 44, 2, 77, 1024];

function assertSameAnswer(
  model: Model,
  got: ReturnType<typeof generateDrafted>,
  maxNew: number,
  eos?: number,
) {
  const want = generate(model, PROMPT, maxNew, eos);
  assert.deepEqual(got.tokens, want.tokens);
  assert.equal(got.logits.length, want.logits.length);
  got.logits.forEach((l, i) => assert.deepEqual(bits(l), bits(want.logits[i]!), `logits of token ${i}`));
}

/** Proposes what `inner` proposes, but with every `every`-th proposal replaced by a wrong id. */
function perturbed(inner: Drafter, every: number, V: number): Drafter & { changed: number } {
  let n = 0;
  const d = {
    changed: 0,
    draft(cache: KvCache, next: number, k: number) {
      return inner.draft(cache, next, k).map((id) => {
        if (++n % every !== 0) return id;
        d.changed++;
        return (id + 1) % V;
      });
    },
  };
  return d;
}

const model = lively(5);
const reference = generate(model, PROMPT, 24);

Deno.test("draft-and-verify with the int8 drafter gives the reference greedy tokens and logits bit for bit", () => {
  assert.ok(new Set(reference.tokens).size >= 6, `the answer varies: ${reference.tokens}`);
  for (const k of [1, 4, 7]) {
    const got = generateDrafted(model, PROMPT, 24, { drafter: new Q8Drafter(model), k });
    assertSameAnswer(model, got, 24);
    assert.ok(got.stats.drafted > 0 && got.stats.accepted <= got.stats.drafted, JSON.stringify(got.stats));
    assert.ok(got.stats.accepted > 0, `k ${k}: the int8 copy agrees sometimes: ${JSON.stringify(got.stats)}`);
  }
});

Deno.test("a deliberately wrong drafter changes nothing but the acceptance rate", () => {
  const V = model.config.vocab_size;
  for (const every of [1, 2, 3]) {
    const drafter = perturbed(new Q8Drafter(model), every, V);
    const got = generateDrafted(model, PROMPT, 24, { drafter, k: 5 });
    assertSameAnswer(model, got, 24);
    assert.ok(drafter.changed > 0);
    if (every === 1) assert.equal(got.stats.accepted, 0); // every proposal was wrong
  }
});

Deno.test("an oracle drafter is accepted in full: 24 tokens in a few verification passes", () => {
  const oracle: Drafter = {
    draft: (cache, _next, k) =>
      reference.tokens.slice(cache.length - PROMPT.length + 1, cache.length - PROMPT.length + 1 + k),
  };
  const got = generateDrafted(model, PROMPT, 24, { drafter: oracle, k: 7 });
  assertSameAnswer(model, got, 24);
  assert.equal(got.stats.accepted, got.stats.drafted);
  assert.equal(got.stats.rounds, 3); // 1 token from the prompt pass, then 3 × (7 accepted + 1 of its own) ≥ 23
});

Deno.test("drafters that throw, return impossible ids or too many ids cost only speed", () => {
  const V = model.config.vocab_size;
  const drafters: Drafter[] = [
    {
      draft: () => {
        throw new Error("drafter crashed");
      },
    },
    { draft: () => [reference.tokens[1]!, -1, 3] },
    { draft: () => [V, 0] },
    { draft: () => [1.5] },
    { draft: () => new Array(500).fill(reference.tokens[1]!) },
  ];
  for (const drafter of drafters) {
    assertSameAnswer(model, generateDrafted(model, PROMPT, 12, { drafter, k: 4 }), 12);
  }
});

Deno.test("draft-and-verify stops at eos and maxNew like generate, and rejects bad k and lengths with invalid_tensor", () => {
  const eos = reference.tokens[5]!;
  const drafter = new Q8Drafter(model);
  assertSameAnswer(model, generateDrafted(model, PROMPT, 24, { drafter, eos }), 24, eos);
  for (const n of [0, 1, 2, 9]) {
    const got = generateDrafted(model, PROMPT, n, { drafter, k: 4 });
    assert.deepEqual(got.tokens, generate(model, PROMPT, n).tokens);
    assert.deepEqual(got.tokens, reference.tokens.slice(0, n));
  }
  const streamed: number[] = [];
  generateDrafted(model, PROMPT, 10, { drafter, onToken: (id) => streamed.push(id) });
  assert.deepEqual(streamed, reference.tokens.slice(0, 10));
  const P = model.config.max_position_embeddings;
  assertSameAnswer(model, generateDrafted(model, PROMPT, 3, { drafter: null }), 3);
  // Up to the last position, exactly as generate allows.
  const long = new Array(P - 4).fill(7);
  assert.deepEqual(
    generateDrafted(model, long, 5, { drafter, k: 8 }).tokens,
    generate(model, long, 5).tokens,
  );
  assert.equal(errorCode(() => generateDrafted(model, long, 6, { drafter })), "invalid_tensor");
  assert.equal(errorCode(() => generateDrafted(model, [], 2, { drafter })), "invalid_tensor");
  for (const k of [-1, 65, 2.5]) {
    assert.equal(errorCode(() => generateDrafted(model, PROMPT, 2, { drafter, k })), "invalid_tensor");
  }
});
