/** What the lifecycle pages share: a query that may not exist on this validator, and a transaction table. */
import type { JsonValue } from "../../core/canonical.ts";
import type { PageContext } from "../answer.ts";
import type { TxSummary } from "../chain_index.ts";
import { accountLink, blockLink, jsonView, txLink } from "../format.ts";
import { type Html, html } from "../html.ts";
import { listTable, txOutcome } from "../tables.ts";

/** The most entries (proposals, jobs, evaluations) a lifecycle page looks up one by one. */
export const MAX_LOOKUPS = 32;

/** A query answer, or null when the validator does not have the path (404) or fails on it. */
export async function tryQuery(ctx: PageContext, path: string): Promise<JsonValue | null> {
  try {
    return await ctx.source.query(path);
  } catch {
    return null;
  }
}

/** The transactions of a lifecycle: block, hash, kind, sender, small fields, result. */
export function txTable(txs: readonly TxSummary[]): Html {
  return listTable(
    ["block", "tx", "kind", "sender", "fields", "result"],
    txs.map((t) =>
      html`
        <tr>
          <td>${blockLink(t.height)}</td>
          <td>${txLink(t.hash)}</td>
          <td>${t.kind}</td>
          <td>${accountLink(t.sender)}</td>
          <td>${jsonView(t.fields)}</td>
          <td>${txOutcome(t.ok, t.code)}</td>
        </tr>
      `
    ),
  );
}
