/**
 * A deterministic byte-level BPE trainer. The vocabulary starts with the special tokens (ids 0, 1, 2), then the
 * 256 byte characters in byte order; each step merges the pair of adjacent symbols with the highest count over
 * the unique pre-tokens weighted by their frequency. Ties are broken by the pair's strings: the smaller left
 * string in code point order (which is UTF-8 byte order) wins, then the smaller right string. Pre-tokens never
 * span a special token, a digit or a GPT-2 regex boundary, so no merge crosses one.
 *
 * Pair counts are kept incrementally: a merge only revisits the words that contain the merged pair.
 *
 * @example
 * ```ts
 * import { trainBpe } from "./bpe_trainer.ts";
 * const model = trainBpe(["hello hello world"], 270);
 * model.merges[0]; // ["e", "l"] (ties with ["h", "e"], ["l", "l"], ["l", "o"]; "e" sorts first)
 * ```
 */
import { compareCodePoints } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { BYTE_TO_CHAR, preTokenize } from "./byte_level.ts";

/** The special tokens every trained tokenizer starts with, in id order. */
export const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

/** The smallest and largest vocabulary the trainer accepts. */
export const MIN_VOCAB = SPECIAL_TOKENS.length + 256;
export const MAX_VOCAB = 65_536;

/** A trained BPE model: the vocabulary in id order and the merges in rank order. */
export interface BpeModel {
  readonly vocab: readonly string[];
  readonly merges: readonly (readonly [string, string])[];
}

interface HeapEntry {
  count: number;
  key: number;
}

/** Counts the byte-level pre-tokens of `texts` (special tokens excluded). */
export function countPreTokens(texts: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    for (const piece of preTokenize(text, SPECIAL_TOKENS)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
  }
  return counts;
}

/**
 * Trains a vocabulary of at most `vocabSize` tokens on `texts` (fewer when no pair is left to merge).
 * `onProgress` is told the vocabulary size after each merge (it cannot change the result).
 */
export function trainBpe(
  texts: Iterable<string>,
  vocabSize: number,
  onProgress?: (size: number, vocabSize: number) => void,
): BpeModel {
  if (!Number.isSafeInteger(vocabSize) || vocabSize < MIN_VOCAB || vocabSize > MAX_VOCAB) {
    throw new ProtocolError(
      "invalid_tokenizer",
      `Cannot train tokenizer: vocabulary size is ${vocabSize}, expected ${MIN_VOCAB} to ${MAX_VOCAB}`,
    );
  }
  const tokens: string[] = [...SPECIAL_TOKENS, ...BYTE_TO_CHAR];
  const tokenId = new Map<string, number>(tokens.map((t, i) => [t, i]));
  const counted = [...countPreTokens(texts)].sort((x, y) => compareCodePoints(x[0], y[0]));
  const words: Int32Array[] = counted.map(([piece]) => Int32Array.from(piece, (c) => tokenId.get(c)!));
  const freq: number[] = counted.map(([, n]) => n);

  const pairCount = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const heap = new PairHeap(tokens);
  const touched = new Set<number>();
  const add = (w: number, sign: 1 | -1): void => {
    const word = words[w]!;
    for (let i = 0; i + 1 < word.length; i++) {
      const key = word[i]! * MAX_VOCAB + word[i + 1]!;
      pairCount.set(key, (pairCount.get(key) ?? 0) + sign * freq[w]!);
      touched.add(key);
      if (sign === 1) {
        let set = pairWords.get(key);
        if (set === undefined) pairWords.set(key, set = new Set());
        set.add(w);
      }
    }
  };
  for (let w = 0; w < words.length; w++) add(w, 1);
  for (const key of touched) heap.push({ count: pairCount.get(key)!, key });
  touched.clear();

  const merges: [string, string][] = [];
  while (tokens.length < vocabSize) {
    const top = heap.pop();
    if (top === undefined) break;
    if (top.count <= 0 || pairCount.get(top.key) !== top.count) continue;
    const a = Math.floor(top.key / MAX_VOCAB);
    const b = top.key % MAX_VOCAB;
    const merged = tokens[a]! + tokens[b]!;
    let id = tokenId.get(merged);
    if (id === undefined) {
      id = tokens.length;
      tokens.push(merged);
      tokenId.set(merged, id);
    }
    merges.push([tokens[a]!, tokens[b]!]);
    onProgress?.(tokens.length, vocabSize);
    for (const w of pairWords.get(top.key) ?? []) {
      add(w, -1);
      words[w] = mergeWord(words[w]!, a, b, id);
      add(w, 1);
    }
    pairWords.delete(top.key);
    for (const key of touched) {
      const count = pairCount.get(key)!;
      if (count > 0) heap.push({ count, key });
      else {
        pairCount.delete(key);
        pairWords.delete(key);
      }
    }
    touched.clear();
  }
  return { vocab: tokens, merges };
}

/** Replaces every non-overlapping occurrence of (a, b), left to right, with `id`. */
function mergeWord(word: Int32Array, a: number, b: number, id: number): Int32Array {
  const out = new Int32Array(word.length);
  let n = 0;
  for (let i = 0; i < word.length; i++) {
    if (i + 1 < word.length && word[i] === a && word[i + 1] === b) {
      out[n++] = id;
      i++;
    } else out[n++] = word[i]!;
  }
  return out.slice(0, n);
}

/** A binary max-heap of pair counts; equal counts order by (left, right) string, smallest first. */
class PairHeap {
  private readonly items: HeapEntry[] = [];
  constructor(private readonly tokens: readonly string[]) {}

  push(entry: HeapEntry): void {
    const items = this.items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): HeapEntry | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < items.length && this.before(items[l]!, items[best]!)) best = l;
      if (r < items.length && this.before(items[r]!, items[best]!)) best = r;
      if (best === i) return top;
      [items[i], items[best]] = [items[best]!, items[i]!];
      i = best;
    }
  }

  /** True when `x` must be merged before `y`. */
  private before(x: HeapEntry, y: HeapEntry): boolean {
    if (x.count !== y.count) return x.count > y.count;
    if (x.key === y.key) return false;
    const t = this.tokens;
    const left = compareCodePoints(t[Math.floor(x.key / MAX_VOCAB)]!, t[Math.floor(y.key / MAX_VOCAB)]!);
    if (left !== 0) return left < 0;
    return compareCodePoints(t[x.key % MAX_VOCAB]!, t[y.key % MAX_VOCAB]!) < 0;
  }
}
