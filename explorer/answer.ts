/** What an explorer route answers, and the errors that become 400 and 404 pages. */
import type { ChainIndex } from "./chain_index.ts";
import type { ClaimStates } from "./claim_states.ts";
import type { Codecs } from "./codecs.ts";
import type { Html } from "./html.ts";
import type { ChainSource } from "./source.ts";

/** What every page reads from. */
export interface PageContext {
  readonly source: ChainSource;
  readonly index: ChainIndex;
  readonly claims: ClaimStates;
  readonly codecs: Codecs;
  readonly url: URL;
}

/** A rendered page or JSON answer. */
export type Answer = { readonly kind: "html"; readonly body: Html } | {
  readonly kind: "json";
  readonly body: unknown;
};

/** A request the explorer answers with 400 (malformed id) or 404 (unknown id or path). */
export class PageError extends Error {
  constructor(readonly status: 400 | 404, message: string) {
    super(message);
    this.name = "PageError";
  }
}

/** A 400 answer: `what` is malformed. */
export function malformed(what: string, value: string, expected: string): PageError {
  return new PageError(
    400,
    `Cannot show ${what}: value is ${JSON.stringify(value.slice(0, 80))}, expected ${expected}`,
  );
}

/** A 404 answer: no such `what`. */
export function unknown(what: string, value: string): PageError {
  return new PageError(404, `Cannot show ${what}: ${value.slice(0, 80)} is not on this chain`);
}

/** The id of a path like `/claim/<id>`, checked against `pattern`. */
export function pathId(rest: string, what: string, pattern: RegExp, expected: string): string {
  if (!pattern.test(rest)) throw malformed(what, decodeURIComponent(rest), expected);
  return rest;
}
