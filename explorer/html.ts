/**
 * Safe HTML for the explorer's pages. `html` is a tagged template whose interpolated values are escaped
 * unless they are already `Html` (made by `html` itself or `raw`); arrays are joined. Everything that comes
 * from the chain goes through it, so a memo, a reason or an id can never become markup.
 *
 * @example
 * ```ts
 * import { html } from "./html.ts";
 * html`<td>${"<script>"}</td>`.text; // "<td>&lt;script&gt;</td>"
 * ```
 */

/** A string that is already HTML. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for an HTML body or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function part(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/** Builds HTML, escaping every interpolated value that is not `Html`. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => (out += part(v) + strings[i + 1]!));
  return new Html(out);
}

/** Trusted markup (only for constants of the explorer itself). */
export function raw(text: string): Html {
  return new Html(text);
}

/** JSON for a `<script type="application/json">` block: `<`, `>` and `&` are escaped so it cannot end the block. */
export function scriptJson(value: unknown): Html {
  return new Html(
    JSON.stringify(value).replace(
      /[<>&\u2028\u2029]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    ),
  );
}
