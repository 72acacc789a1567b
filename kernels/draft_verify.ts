/**
 * Draft-and-verify greedy generation: the output is, by construction, exactly `generate`'s (the reference
 * greedy answer), only faster when the drafter is often right.
 *
 * Each round, the kernels' own next token t (from the last verified logits) is known. A drafter
 * (`draft.ts`, non-consensus) proposes d1 … dk after it; one deterministic `decode` of [t, d1, …, dk] gives
 * the kernels' logits at each of those positions, the same bits as decoding them one by one. The longest
 * prefix d1 … dj that equals the kernels' greedy choices is accepted, the kernels' own choice at position
 * j + 1 is appended (a correction, or a free token when all k were right), and the cache is cut back to the
 * positions that were accepted. So every emitted token is the argmax of logits the deterministic kernels
 * computed over exactly the reference prefix, and the logits returned are those bits.
 *
 * @example
 * ```ts
 * import { generateDrafted } from "./draft_verify.ts";
 * import { Q8Drafter } from "./draft.ts";
 * // const { tokens, stats } = generateDrafted(model, prompt, 64, { eos: 2, drafter: new Q8Drafter(model) });
 * // stats.accepted / stats.drafted is the acceptance rate
 * ```
 * @module
 */

import { headDim } from "./config.ts";
import { argmax } from "./cross_entropy.ts";
import type { Drafter } from "./draft.ts";
import { decode, decodeHidden, type Generation, KvCache } from "./generation.ts";
import { headTokens } from "./head_argmax.ts";
import type { Model } from "./model.ts";
import { rotaryTables } from "./rotary.ts";
import { ProtocolError } from "../core/errors.ts";

/** How draft-and-verify went: tokens proposed, proposals accepted, verification passes. */
export interface DraftStats {
  readonly drafted: number;
  readonly accepted: number;
  readonly rounds: number;
}

/** Options of `generateDrafted`. */
export interface DraftOptions {
  /** Stop after this id (it is included in the tokens), as `generate` does. */
  readonly eos?: number;
  /** Proposes tokens; null (or omitted) generates without drafts, one verified token per pass. */
  readonly drafter?: Drafter | null;
  /** Most tokens drafted per round (default 6). */
  readonly k?: number;
  /** Called with each new token as soon as it is verified (e.g. to stream it). */
  readonly onToken?: (id: number) => void;
  /**
   * Return no logits (`logits` is empty): each position's id is then chosen by the exact pruned head
   * (`headTokens`, the same ids and errors as `argmax` of its logits), and a pass decides its positions one
   * by one, stopping at the first disagreement, as decoding them one at a time would.
   */
  readonly tokensOnly?: boolean;
}

/** The default number of tokens drafted per verification pass. */
export const DEFAULT_DRAFT = 6;

/**
 * Greedy generation of up to `maxNew` ids after `prompt`, equal bit for bit to `generate(model, prompt,
 * maxNew, eos)` in tokens and logits (with `tokensOnly`, in tokens, and no logits), using `options.drafter` to
 * verify several tokens per pass.
 */
export function generateDrafted(
  model: Model,
  prompt: readonly number[],
  maxNew: number,
  options: DraftOptions = {},
): Generation & { readonly stats: DraftStats } {
  const c = model.config, V = c.vocab_size, P = c.max_position_embeddings;
  const k = options.k ?? DEFAULT_DRAFT;
  if (!Number.isSafeInteger(k) || k < 0 || k > 64) {
    throw new ProtocolError("invalid_tensor", `Cannot draft tokens: k is ${k}, expected an integer 0..64`);
  }
  if (prompt.length < 1 || prompt.length + maxNew - 1 > P) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot run model: ${prompt.length + maxNew - 1} positions, expected 1..${P}`,
    );
  }
  // The positions a pass can reach (a pass feeds at most up to the last new token); the values of a position
  // do not depend on how many the tables hold, and 8192 positions take 25-130 ms to build.
  const tables = rotaryTables(Math.min(P, prompt.length + maxNew), headDim(c), c.rope_theta);
  const cache = new KvCache(c, prompt.length + maxNew); // grows past it only if a draft runs ahead
  try {
    const tokens: number[] = [], logits: Float32Array[] = [];
    let drafted = 0, accepted = 0, rounds = 0;
    const emit = (id: number, row: Float32Array | null): boolean => {
      tokens.push(id);
      if (row !== null) logits.push(row);
      options.onToken?.(id);
      return id === options.eos || tokens.length >= maxNew;
    };
    // The ids of `rows` [n, V] logits (or [n, C] hidden rows with tokensOnly), decided row by row when asked.
    const tokensOnly = options.tokensOnly === true;
    const pass = (ids: readonly number[], lastOnly: boolean) => {
      if (!tokensOnly) {
        const out = decode(model, cache, ids, tables, lastOnly); // logits [n, V], exact
        return (j: number) => {
          const row = out.slice(j * V, (j + 1) * V);
          return { id: argmax(row, 1, V)[0]!, row };
        };
      }
      const x = decodeHidden(model, cache, ids, tables, lastOnly), C = c.hidden_size; // x: [n, C]
      const { norm, embed } = model.components;
      return (j: number) => ({
        id: headTokens(x.subarray(j * C, (j + 1) * C), norm!, embed!, c, 1)[0]!,
        row: null,
      });
    };
    const first = pass(prompt, true)(0); // the prompt's last position chooses the first id
    let next = first.id;
    if (maxNew < 1 || emit(next, first.row)) return { tokens, logits, stats: { drafted, accepted, rounds } };
    for (;;) {
      // Room: positions up to L + 1 + n must exist, and no more than the tokens still wanted.
      const room = Math.min(k, maxNew - tokens.length - 1, P - cache.length - 1);
      let proposal: number[] = [];
      if (options.drafter && room > 0) {
        try {
          proposal = options.drafter.draft(cache, next, room).slice(0, room);
          const bad = proposal.findIndex((id) => !Number.isSafeInteger(id) || id < 0 || id >= V);
          if (bad >= 0) proposal = proposal.slice(0, bad); // an impossible id ends the proposal
        } catch {
          proposal = []; // a drafter's failure costs only speed
        }
      }
      drafted += proposal.length;
      rounds++;
      const base = cache.length;
      const chosenAt = pass([next, ...proposal], false);
      let j = 0;
      for (; j <= proposal.length; j++) {
        const { id: chosen, row } = chosenAt(j);
        const agreed = j < proposal.length && proposal[j] === chosen;
        if (agreed) accepted++;
        if (emit(chosen, row)) return { tokens, logits, stats: { drafted, accepted, rounds } };
        if (!agreed) {
          next = chosen;
          break;
        }
      }
      cache.length = base + 1 + j; // next and the j accepted drafts; later rows are stale and overwritten
    }
  } finally {
    cache.release(); // its block is reused by the next generation
  }
}
