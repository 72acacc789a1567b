/**
 * Canonical JSON (PROTOCOL §1): object keys sorted by Unicode code point, no insignificant whitespace, ASCII
 * only (non-ASCII and 0x7F as lowercase `\uXXXX`, astral characters as surrogate pairs, the short escapes for
 * `"` `\\` `\b` `\f` `\n` `\r` `\t`, other control characters as `\u00XX`), integers in the safe range and no
 * floats. The spelling equals Python's `json.dumps(v, sort_keys=True, separators=(",",":"),
 * ensure_ascii=True)` for every value we allow.
 *
 * Decoding is strict: anything signed or hashed must parse to a value whose canonical encoding is the input,
 * byte for byte. Duplicate keys, floats, unsafe integers, `NaN`, trailing data and lone surrogates are each
 * rejected with their own code.
 *
 * @example
 * ```ts
 * import { canonical, decodeCanonical } from "./canonical.ts";
 * canonical({ b: "é", a: 1 }); // '{"a":1,"b":"\\u00e9"}'
 * decodeCanonical('{"a":1}'); // { a: 1 }
 * decodeCanonical('{"a":1.0}'); // throws ProtocolError float_not_allowed
 * ```
 */
import { ProtocolError } from "./errors.ts";
import { MAX_JSON_DEPTH } from "./limits.ts";

/** A value canonical JSON can carry. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

const SHORT_ESCAPES: Record<number, string> = {
  0x22: '\\"',
  0x5c: "\\\\",
  0x08: "\\b",
  0x0c: "\\f",
  0x0a: "\\n",
  0x0d: "\\r",
  0x09: "\\t",
};

/** Compares two strings by Unicode code point (not by UTF-16 unit, which orders astral characters wrongly). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (0xD800-0xDFFF) stand for code points above 0xFFFF, so they sort after 0xE000-0xFFFF.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

function hex4(unit: number): string {
  return "\\u" + unit.toString(16).padStart(4, "0");
}

/** Printable ASCII other than `"` and `\\`: such a string is its own canonical spelling between quotes. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** What `JSON.stringify` leaves unescaped but canonical JSON escapes: DEL and everything above ASCII. */
const NON_ASCII = /[\u007f-\uffff]/g;
const SURROGATE = /[\ud800-\udfff]/;

function encodeString(s: string): string {
  if (PLAIN.test(s)) return '"' + s + '"';
  if (SURROGATE.test(s)) checkSurrogates(s);
  // JSON.stringify already writes the short escapes and lowercase \u00XX for other control characters;
  // what remains is to escape DEL and non-ASCII units (each half of a surrogate pair separately).
  return JSON.stringify(s).replace(NON_ASCII, (c) => hex4(c.charCodeAt(0)));
}

function checkSurrogates(s: string): void {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) throw loneSurrogate(c);
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      throw loneSurrogate(c);
    }
  }
}

/** The reference spelling, one code unit at a time; tests check the fast path against it. */
export function encodeStringSlow(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) {
      out += c === 0x22 || c === 0x5c ? SHORT_ESCAPES[c]! : s[i]!;
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) throw loneSurrogate(c);
      out += hex4(c) + hex4(d);
      i++;
      continue;
    }
    if (c >= 0xdc00 && c <= 0xdfff) throw loneSurrogate(c);
    out += SHORT_ESCAPES[c] ?? hex4(c);
  }
  return out + '"';
}

function loneSurrogate(unit: number): ProtocolError {
  return new ProtocolError("invalid_value", `Cannot encode string: lone surrogate U+${unit.toString(16)}`);
}

function encodeValue(value: unknown, depth: number, path: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return encodeString(value);
    case "number":
      if (!Number.isFinite(value) || !Number.isInteger(value)) {
        throw new ProtocolError("float_not_allowed", `Cannot encode ${path}: ${value} is not an integer`);
      }
      if (!Number.isSafeInteger(value)) {
        throw new ProtocolError(
          "unsafe_integer",
          `Cannot encode ${path}: ${value} is outside the safe range`,
        );
      }
      return Object.is(value, -0) ? "0" : String(value);
    case "object": {
      if (depth >= MAX_JSON_DEPTH) {
        throw new ProtocolError("too_deep", `Cannot encode ${path}: nesting exceeds ${MAX_JSON_DEPTH}`);
      }
      if (Array.isArray(value)) {
        return "[" + value.map((v, i) => encodeValue(v, depth + 1, `${path}[${i}]`)).join(",") + "]";
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new ProtocolError("invalid_value", `Cannot encode ${path}: not a plain object`);
      }
      const keys = sortedKeys(value);
      const record = value as Record<string, unknown>;
      const parts: string[] = [];
      for (const k of keys) {
        if (record[k] === undefined) {
          throw new ProtocolError("invalid_value", `Cannot encode ${path}.${k}: undefined`);
        }
        parts.push(encodeString(k) + ":" + encodeValue(record[k], depth + 1, `${path}.${k}`));
      }
      return "{" + parts.join(",") + "}";
    }
    default:
      throw new ProtocolError("invalid_value", `Cannot encode ${path}: a ${typeof value} is not JSON`);
  }
}

/**
 * Keys in code-point order. The default sort compares UTF-16 units, which agrees with code points unless a
 * key holds a surrogate (an astral character), so the slower comparator is used only then.
 */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  for (const k of keys) if (SURROGATE.test(k)) return keys.sort(compareCodePoints);
  return keys.sort();
}

/** The canonical JSON text of `value` (ASCII only). Throws `ProtocolError` for values it cannot carry. */
export function canonical(value: unknown): string {
  return encodeValue(value, 0, "value");
}

const encoder = new TextEncoder();

/** The canonical JSON bytes of `value`. */
export function canonicalBytes(value: unknown): Uint8Array {
  return encoder.encode(canonical(value));
}

/**
 * Parses canonical JSON strictly: the text (or ASCII bytes) must be exactly the canonical encoding of the
 * value it parses to. Use for anything signed or hashed.
 */
export function decodeCanonical(input: string | Uint8Array): JsonValue {
  const text = typeof input === "string" ? input : asciiText(input);
  const value = parseJson(text);
  if (canonical(value) !== text) {
    throw new ProtocolError("non_canonical", "Cannot accept JSON: the bytes are not in canonical form");
  }
  return value;
}

function asciiText(bytes: Uint8Array): string {
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i]! > 0x7f) {
      throw new ProtocolError(
        "non_canonical",
        `Cannot accept JSON: non-ASCII byte 0x${bytes[i]!.toString(16)} at ${i}`,
      );
    }
  }
  return new TextDecoder().decode(bytes);
}

/**
 * Parses JSON text with the strict value rules (no duplicate keys, no floats, safe integers, no lone
 * surrogates, nothing after the value) but any whitespace and escape spelling. Use for files people write.
 */
export function parseJson(text: string): JsonValue {
  return new Parser(text).document();
}

class Parser {
  private pos = 0;
  constructor(private readonly text: string) {}

  document(): JsonValue {
    this.ws();
    const value = this.value(0);
    this.ws();
    if (this.pos !== this.text.length) {
      throw new ProtocolError("trailing_data", `Cannot parse JSON: trailing data at offset ${this.pos}`);
    }
    return value;
  }

  private fail(what: string): never {
    throw new ProtocolError("invalid_json", `Cannot parse JSON: ${what} at offset ${this.pos}`);
  }

  private ws(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      this.pos++;
    }
  }

  private value(depth: number): JsonValue {
    const c = this.text[this.pos];
    if (c === "{" || c === "[") {
      if (depth >= MAX_JSON_DEPTH) {
        throw new ProtocolError("too_deep", `Cannot parse JSON: nesting exceeds ${MAX_JSON_DEPTH}`);
      }
      return c === "{" ? this.object(depth) : this.array(depth);
    }
    if (c === '"') return this.string();
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    if (this.text.startsWith("NaN", this.pos) || this.text.startsWith("Infinity", this.pos)) {
      this.fail("NaN and Infinity are not JSON");
    }
    return this.fail(c === undefined ? "unexpected end" : `unexpected character ${JSON.stringify(c)}`);
  }

  private object(depth: number): JsonObject {
    this.pos++; // {
    const out: JsonObject = {};
    this.ws();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.text[this.pos] !== '"') this.fail("expected a string key");
      const at = this.pos;
      const key = this.string();
      if (Object.hasOwn(out, key)) {
        throw new ProtocolError(
          "duplicate_key",
          `Cannot parse JSON: duplicate key ${JSON.stringify(key)} at offset ${at}`,
        );
      }
      this.ws();
      if (this.text[this.pos] !== ":") this.fail("expected ':'");
      this.pos++;
      this.ws();
      // defineProperty: a key named "__proto__" must become an own property, not the prototype.
      Object.defineProperty(out, key, {
        value: this.value(depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      this.ws();
      const c = this.text[this.pos];
      this.pos++;
      if (c === "}") return out;
      if (c !== ",") {
        this.pos--;
        this.fail("expected ',' or '}'");
      }
    }
  }

  private array(depth: number): JsonValue[] {
    this.pos++; // [
    const out: JsonValue[] = [];
    this.ws();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      this.ws();
      out.push(this.value(depth + 1));
      this.ws();
      const c = this.text[this.pos];
      this.pos++;
      if (c === "]") return out;
      if (c !== ",") {
        this.pos--;
        this.fail("expected ',' or ']'");
      }
    }
  }

  private number(): number {
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(
      this.text.slice(this.pos, this.pos + 400),
    );
    if (!m || m[0] === "-") this.fail("malformed number");
    const at = this.pos;
    this.pos += m[0].length;
    if (m[2] !== undefined || m[3] !== undefined) {
      throw new ProtocolError(
        "float_not_allowed",
        `Cannot parse JSON: ${m[0]} at offset ${at} is not an integer`,
      );
    }
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n) || m[0].replace("-", "").length > 16) {
      throw new ProtocolError(
        "unsafe_integer",
        `Cannot parse JSON: ${m[0]} at offset ${at} is outside the safe range`,
      );
    }
    return n;
  }

  private string(): string {
    const t = this.text;
    this.pos++; // opening quote
    let out = "";
    let start = this.pos;
    for (;;) {
      if (this.pos >= t.length) this.fail("unterminated string");
      const c = t.charCodeAt(this.pos);
      if (c === 0x22) {
        out += t.slice(start, this.pos);
        this.pos++;
        break;
      }
      if (c < 0x20) this.fail("control character in string");
      if (c !== 0x5c) {
        this.pos++;
        continue;
      }
      out += t.slice(start, this.pos);
      const e = t[this.pos + 1];
      const simple: Record<string, string> = {
        '"': '"',
        "\\": "\\",
        "/": "/",
        b: "\b",
        f: "\f",
        n: "\n",
        r: "\r",
        t: "\t",
      };
      if (e !== undefined && e in simple) {
        out += simple[e];
        this.pos += 2;
      } else if (e === "u") {
        const h = t.slice(this.pos + 2, this.pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail("bad \\u escape");
        out += String.fromCharCode(parseInt(h, 16));
        this.pos += 6;
      } else {
        this.fail("bad escape");
      }
      start = this.pos;
    }
    for (let i = 0; i < out.length; i++) {
      const c = out.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff) {
        const d = out.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          i++;
          continue;
        }
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        throw new ProtocolError(
          "invalid_value",
          `Cannot parse JSON: lone surrogate U+${c.toString(16)} in string`,
        );
      }
    }
    return out;
  }
}

/** True when `value` is a plain JSON object (not an array or null). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** True when `value` has exactly the keys in `keys`, no more and no fewer. */
export function hasExactKeys(value: JsonObject, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  return own.length === keys.length && keys.every((k) => Object.hasOwn(value, k));
}
