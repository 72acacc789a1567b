/** Generated multilingual text for the tokenizer oracle and the benchmark (deterministic by seed). */

/** The eight conformance probes (PROTOCOL §11 oracle tests). */
export const PROBES: Record<string, string> = {
  english: "The quick brown fox jumps over the lazy dog. It's 3:45pm, isn't it? We'll see; they've gone.",
  hebrew: "שלום עולם! זהו מבחן של מפרק מילים, עם ניקוד: בְּרֵאשִׁית בָּרָא.",
  arabic: "مرحبا بالعالم، هذا اختبار ٣٤٥ للترميز والكلمات العربية.",
  chinese: "你好，世界！这是一个分词测试，包括标点符号和数字2024年。",
  emoji_accents: "Café naïve résumé 👩🏽‍💻🎉 ñ Å e\u0301 Ω≈ç√ 🇮🇱 🙂🙃 façade",
  code_tabs_crlf: "def f(x):\r\n\tif x > 0:\r\n\t\treturn x * 2  # double\r\n\treturn -1\r\n",
  whitespace_runs: "a  b   c\t\t d\n\n\n   e    \u00a0 f   \n",
  mixed_direction: "The word שלום means peace; مرحبا means hello (123), and 你好 too.",
};

const POOL = [
  "the",
  "of",
  "and",
  "tokenizer",
  "model",
  "training",
  "window",
  "answer",
  "question",
  "reverse",
  "count",
  "שלום",
  "עולם",
  "ספר",
  "מילה",
  "ילד",
  "בית",
  "מרחב",
  "מבחן",
  "مرحبا",
  "كتاب",
  "العالم",
  "مدرسة",
  "كلمة",
  "بيت",
  "اختبار",
  "你好",
  "世界",
  "分词",
  "测试",
  "模型",
  "数据",
  "学习",
  "café",
  "naïve",
  "über",
  "straße",
  "niño",
  "façade",
  "résumé",
  "🙂",
  "🎉",
  "👩🏽‍💻",
  "🇮🇱",
  "Ω",
  "√",
  "def",
  "return",
  "x",
  "=",
  "(",
  ")",
  "{",
  "}",
  ";",
  "->",
  "//",
  "#",
  "2024",
  "3.14",
  "42",
  "٣٤٥",
  "100%",
];
const SEPARATORS = [" ", " ", " ", " ", "  ", "\t", "\n", "\r\n", ", ", ". ", "\n\n", "   "];

/** About `chars` UTF-16 units of mixed-script text from a seeded LCG. */
export function multilingualText(seed: number, chars: number): string {
  let x = seed >>> 0;
  const next = () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x >>> 8;
  };
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = POOL[next() % POOL.length]!;
    const sep = SEPARATORS[next() % SEPARATORS.length]!;
    const piece = (next() % 9 === 0 ? word.toUpperCase() : word) + sep;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join("");
}
