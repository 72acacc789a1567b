/**
 * A structural diff of two JSON values: the paths at which they differ, one line each, in key order, so a
 * person reading a replay divergence sees `claim.challenge.sealed: expected 2 items, actual 1` instead of
 * comparing two screens of JSON.
 *
 * Paths are written `a.b[3].c`; a key that is not a plain identifier is written `["odd key"]`. Arrays are
 * compared position by position (a length change is reported once, then the positions both have). Values in
 * a line are canonical JSON, shortened to {@link MAX_VALUE_CHARS} characters.
 *
 * @example
 * ```ts
 * import { jsonDiff } from "./json_diff.ts";
 * jsonDiff({ a: { b: [1, 2] }, n: 1 }, { a: { b: [1] }, n: 2 });
 * // ["a.b: expected 2 items, actual 1", "n: expected 1, actual 2"]
 * ```
 */
import { canonical, compareCodePoints, type JsonValue } from "./canonical.ts";

/** How many characters of a value a difference line shows before it is shortened with `…`. */
export const MAX_VALUE_CHARS = 80;

/** How many difference lines {@link jsonDiff} returns by default; past it one line says how many more. */
export const MAX_DIFFERENCES = 20;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The lines at which `expected` and `actual` differ, at most `limit` of them plus a line counting the rest. */
export function jsonDiff(expected: JsonValue, actual: JsonValue, limit = MAX_DIFFERENCES): string[] {
  const lines: string[] = [];
  walk("", expected, actual, lines);
  if (lines.length <= limit) return lines;
  return [...lines.slice(0, limit), `… and ${lines.length - limit} more differences`];
}

function walk(path: string, expected: JsonValue, actual: JsonValue, out: string[]): void {
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) {
      out.push(`${shown(path)}: expected ${items(expected.length)}, actual ${actual.length}`);
    }
    const common = Math.min(expected.length, actual.length);
    for (let i = 0; i < common; i++) walk(`${path}[${i}]`, expected[i]!, actual[i]!, out);
    return;
  }
  if (isPlainObject(expected) && isPlainObject(actual)) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort(compareCodePoints);
    for (const key of keys) {
      const at = join(path, key);
      if (!(key in actual)) out.push(`${at}: expected ${brief(expected[key]!)}, actual absent`);
      else if (!(key in expected)) out.push(`${at}: expected absent, actual ${brief(actual[key]!)}`);
      else walk(at, expected[key]!, actual[key]!, out);
    }
    return;
  }
  if (canonical(expected) !== canonical(actual)) {
    out.push(`${shown(path)}: expected ${brief(expected)}, actual ${brief(actual)}`);
  }
}

function isPlainObject(v: JsonValue): v is { [key: string]: JsonValue } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function join(path: string, key: string): string {
  if (!IDENTIFIER.test(key)) return `${path}[${canonical(key)}]`;
  return path === "" ? key : `${path}.${key}`;
}

function shown(path: string): string {
  return path === "" ? "(whole value)" : path;
}

function items(n: number): string {
  return n === 1 ? "1 item" : `${n} items`;
}

function brief(v: JsonValue): string {
  const text = canonical(v);
  return text.length <= MAX_VALUE_CHARS ? text : `${text.slice(0, MAX_VALUE_CHARS - 1)}…`;
}
