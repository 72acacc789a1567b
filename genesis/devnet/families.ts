/**
 * The task families of the devnet data source: small, exactly checkable skills a small model can visibly learn
 * (arithmetic, letter counting, word reversal, unit conversion, look-ups in a fixed table) and the follow-up
 * questions that build two-turn conversations on them. Every answer is computed, never looked up elsewhere.
 */
import type { RowRandom } from "./prng.ts";

/** One question and its exact answer, with what a follow-up may build on. */
export interface Exchange {
  readonly question: string;
  readonly answer: string;
  /** The number or word a follow-up question refers to. */
  readonly result: number | string;
}

/** A task family: its name and how to draw one exchange. */
export interface Family {
  readonly name: string;
  draw(r: RowRandom): Exchange;
}

/** Common words for the letter and reversal tasks. */
// deno-fmt-ignore
export const WORDS = [
  "apple", "banana", "cherry", "garden", "planet", "river", "mountain", "window", "pencil", "rocket",
  "silver", "orange", "little", "yellow", "summer", "winter", "forest", "island", "market", "bottle",
  "candle", "doctor", "engine", "friend", "guitar", "hammer", "jacket", "kitten", "ladder", "mirror",
  "needle", "pepper", "rabbit", "saddle", "tomato", "violin", "wizard", "zipper", "basket", "button",
  "castle", "dragon", "feather", "giraffe", "harbor", "lantern", "meadow", "notebook", "octopus", "puzzle",
  "quarter", "rainbow", "sandwich", "teacher", "umbrella", "village", "whistle", "blanket", "compass",
  "diamond",
] as const;

// deno-fmt-ignore
const SYLLABLES = [
  "ka", "lo", "mi", "ra", "ven", "tor", "sil", "dun", "bre", "qua", "zen", "fal", "mor", "ith", "el", "ost",
  "par", "ny", "gri", "sha", "wen", "dor", "ul", "bex", "cai", "tri", "lum", "ash", "ve", "rho",
] as const;

/** A pronounceable made-up word of 2–4 syllables (keeps the tokenizer corpus varied). */
export function madeUpWord(r: RowRandom): string {
  let w = "";
  for (let n = r.between(2, 4); n > 0; n--) w += r.pick(SYLLABLES);
  return w;
}

/** The fixed look-up table the generator defines: made-up places and their capital, river and export. */
// deno-fmt-ignore
export const ATLAS = [
  ["Velmora", "Tessin", "Ambrel", "copper"], ["Quorvia", "Lask", "Sendu", "salt"],
  ["Ostrana", "Belhaven", "Mirro", "wool"], ["Dralith", "Korvo", "Ystra", "glass"],
  ["Nimbrel", "Ashgate", "Fennic", "tea"], ["Pellucia", "Varn", "Oxley", "paper"],
  ["Zandor", "Miret", "Calder", "silk"], ["Rhunmark", "Eskel", "Torrin", "iron"],
  ["Sylvane", "Ordo", "Linnet", "honey"], ["Brevosk", "Tamsin", "Grale", "timber"],
  ["Caldria", "Wyse", "Harrow", "olives"], ["Ferrowyn", "Pim", "Dunmore", "tin"],
] as const;

// deno-fmt-ignore
const UNITS = [
  ["kilometres", "metres", 1000], ["metres", "centimetres", 100], ["hours", "minutes", 60],
  ["minutes", "seconds", 60], ["kilograms", "grams", 1000], ["litres", "millilitres", 1000],
  ["days", "hours", 24], ["weeks", "days", 7],
] as const;

const plural = (n: number, one: string, many: string) => (n === 1 ? `${n} ${one}` : `${n} ${many}`);

/** Addition, subtraction and multiplication of small numbers. */
export const ARITHMETIC: Family = {
  name: "arithmetic",
  draw(r) {
    const op = r.below(3);
    const a = r.between(2, op === 2 ? 30 : 500);
    const b = r.between(2, op === 2 ? 30 : 500);
    const [x, y] = op === 1 && b > a ? [b, a] : [a, b];
    const sign = ["+", "-", "*"][op]!;
    const value = op === 0 ? x + y : op === 1 ? x - y : x * y;
    const question = r.pick([
      `What is ${x} ${sign} ${y}?`,
      `Compute ${x} ${sign} ${y}.`,
      `${x} ${sign} ${y} = ?`,
    ]);
    return { question, answer: `${x} ${sign} ${y} = ${value}`, result: value };
  },
};

/** How many times a letter occurs in a word. */
export const LETTER_COUNT: Family = {
  name: "letter_count",
  draw(r) {
    const word = r.below(3) === 0 ? madeUpWord(r) : r.pick(WORDS);
    const letter = r.below(4) === 0 ? r.pick([..."aeiourst"]) : word[r.below(word.length)]!;
    const count = [...word].filter((c) => c === letter).length;
    return {
      question: `How many times does the letter "${letter}" appear in "${word}"?`,
      answer: `The letter "${letter}" appears ${count === 1 ? "once" : `${count} times`} in "${word}".`,
      result: count,
    };
  },
};

/** A word spelled backwards. */
export const REVERSAL: Family = {
  name: "reversal",
  draw(r) {
    const word = r.below(2) === 0 ? madeUpWord(r) : r.pick(WORDS);
    const reversed = [...word].reverse().join("");
    return { question: `Reverse the word "${word}".`, answer: reversed, result: reversed };
  },
};

/** Converting a whole quantity from a larger unit to a smaller one. */
export const CONVERSION: Family = {
  name: "conversion",
  draw(r) {
    const [from, to, factor] = r.pick(UNITS);
    const n = r.between(1, 40);
    const value = n * factor;
    return {
      question: `Convert ${n} ${n === 1 ? from.slice(0, -1) : from} to ${to}.`,
      answer: `${plural(n, from.slice(0, -1), from)} is ${value} ${to}.`,
      result: value,
    };
  },
};

/** Reading one field of the fixed atlas. */
export const LOOKUP: Family = {
  name: "lookup",
  draw(r) {
    const [place, capital, river, goods] = r.pick(ATLAS);
    switch (r.below(3)) {
      case 0:
        return {
          question: `In the atlas, what is the capital of ${place}?`,
          answer: `The capital of ${place} is ${capital}.`,
          result: capital,
        };
      case 1:
        return {
          question: `Which river runs through ${place}?`,
          answer: `The ${river} runs through ${place}.`,
          result: river,
        };
      default:
        return {
          question: `What does ${place} export?`,
          answer: `${place} exports ${goods}.`,
          result: goods,
        };
    }
  },
};

/** Every single-turn family, in a fixed order. */
export const FAMILIES: readonly Family[] = [ARITHMETIC, LETTER_COUNT, REVERSAL, CONVERSION, LOOKUP];

/** A second question that depends on the first exchange's result. */
export function followUp(first: Exchange, r: RowRandom): Exchange {
  if (typeof first.result === "number") {
    const k = r.between(2, 9);
    if (r.below(2) === 0) {
      const value = first.result * k;
      return {
        question: `Now multiply that by ${k}.`,
        answer: `${first.result} * ${k} = ${value}`,
        result: value,
      };
    }
    const value = first.result + k;
    return { question: `And if you add ${k}?`, answer: `${first.result} + ${k} = ${value}`, result: value };
  }
  const word = first.result;
  if (r.below(2) === 0) {
    return {
      question: "How many letters is that?",
      answer: `"${word}" has ${plural(word.length, "letter", "letters")}.`,
      result: word.length,
    };
  }
  const reversed = [...word].reverse().join("");
  return { question: "Now spell it backwards.", answer: reversed, result: reversed };
}
