/**
 * Screening one tranche of rows (pure): each row's document is kept unless its id was consumed by the chain,
 * equals the id of a document collected before or earlier in the tranche (exact duplicate after NFKC, case
 * folding and whitespace collapse), is within the near-duplicate SimHash distance of one of them, or is not a
 * usable conversation (it cannot be cut into windows with the codec).
 *
 * @example
 * ```ts
 * import { screenTranche } from "./screen.ts";
 * const tranche = screenTranche({ source, start, rows, corpus, consumed: new Set(), usable: () => null });
 * tranche.kept.length + tranche.dropped.length === rows.length;
 * ```
 */
import { NEAR_DUPLICATE_DISTANCE } from "../../text/hygiene.ts";
import { rowDocument } from "../../text/sources/document.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { TextCodec } from "../../text/codec.ts";
import { reservedStrings, validateConversation } from "../../text/conversation.ts";
import { buildWindows, IGNORE, type WindowOptions } from "../../text/windows.ts";
import type { Collected, Corpus, Dropped, Tranche } from "./corpus.ts";

/**
 * The curator's usability rule for a row: null when it is a valid conversation that can be cut into windows
 * with `codec` and `windows`, each with at least `minTargets` response targets, else the error code that
 * refuses it (`invalid_batch` for a window with fewer targets).
 */
export function usableRow(
  codec: TextCodec,
  windows: WindowOptions,
  minTargets = 0,
): (messages: ChatMessage[]) => string | null {
  const reserved = reservedStrings(codec);
  return (messages) => {
    try {
      validateConversation(messages, reserved, { generation: false });
      const cut = buildWindows(codec, messages, windows);
      if (cut.windows.some((w) => w.labels.slice(1).filter((l) => l !== IGNORE).length < minTargets)) {
        return "invalid_batch";
      }
      return null;
    } catch (e) {
      if (e instanceof ProtocolError) return e.code;
      throw e;
    }
  };
}

/** What screening a tranche needs. */
export interface ScreenInput {
  readonly source: string;
  readonly start: number;
  readonly rows: readonly ChatMessage[][];
  readonly corpus: Corpus;
  /** Ids the chain has consumed. */
  readonly consumed: ReadonlySet<string>;
  /** Null when the row can be cut into windows, else the error code. */
  readonly usable: (messages: ChatMessage[]) => string | null;
}

/** The tranche record of rows `start … start + rows.length − 1` and the raw objects of the kept rows. */
export function screenTranche(input: ScreenInput): { tranche: Tranche; objects: Map<string, Uint8Array> } {
  const kept: Collected[] = [];
  const dropped: Dropped[] = [];
  const objects = new Map<string, Uint8Array>();
  const seen = new Map<string, string>(); // id -> id, of this tranche's kept rows
  const hashes = input.corpus.documents.map((d) => [bits(d.simhash), d.id] as const);
  input.rows.forEach((messages, i) => {
    const row = input.start + i;
    const doc = rowDocument(messages);
    const drop = (reason: Dropped["reason"], of: string) => dropped.push({ row, id: doc.id, reason, of });
    if (input.consumed.has(doc.id)) return drop("consumed", doc.id);
    const same = input.corpus.byId(doc.id)?.id ?? seen.get(doc.id);
    if (same !== undefined) return drop("duplicate", same);
    const mine = bits(doc.simhash);
    const near = hashes.find(([h]) => near64(h, mine));
    if (near !== undefined) return drop("near_duplicate", near[1]);
    const problem = input.usable(messages);
    if (problem !== null) return drop("invalid", problem);
    kept.push({ source: input.source, row, id: doc.id, simhash: doc.simhash, object: doc.object });
    seen.set(doc.id, doc.id);
    hashes.push([mine, doc.id]);
    objects.set(doc.object, doc.bytes);
  });
  return {
    tranche: {
      source: input.source,
      start: input.start,
      end: input.start + input.rows.length,
      kept,
      dropped,
    },
    objects,
  };
}

/** A 16-hex SimHash as two 32-bit halves. */
function bits(simhash: string): readonly [number, number] {
  return [parseInt(simhash.slice(0, 8), 16), parseInt(simhash.slice(8), 16)];
}

function popcount32(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** `isNearDuplicate` of `text/hygiene.ts` on the halves (Hamming distance at most the profile's bound). */
function near64(a: readonly [number, number], b: readonly [number, number]): boolean {
  return popcount32((a[0] ^ b[0]) >>> 0) + popcount32((a[1] ^ b[1]) >>> 0) <= NEAR_DUPLICATE_DISTANCE;
}
