/** Chat rows for the source tests: mixed scripts, a system message, multi-turn rows, quotes and newlines. */
import type { ChatMessage } from "../../../text/template_render.ts";

/** `n` distinct rows; row i is deterministic. */
export function chatRows(n: number): ChatMessage[][] {
  return Array.from({ length: n }, (_, i) => {
    const rows: ChatMessage[] = [];
    if (i % 5 === 0) rows.push({ role: "system", content: "Answer briefly." });
    rows.push({ role: "user", content: `Question ${i}: what is ${i} + ${i}? «ß» 東京 "quoted"\nline two` });
    rows.push({ role: "assistant", content: `${i + i}. Œuvre №${i} ✓` });
    if (i % 3 === 0) {
      rows.push({ role: "user", content: `And ${i} times 3?` });
      rows.push({ role: "assistant", content: `${3 * i}` });
    }
    return rows;
  });
}
