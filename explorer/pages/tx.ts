/** `/tx/<hash>`: one committed transaction, its decoded body, its result and error code. */
import { isObject, type JsonObject } from "../../core/canonical.ts";
import { canonicalBytes } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { type Answer, malformed, type PageContext, unknown } from "../answer.ts";
import { accountLink, blockLink, claimLink, jsonView } from "../format.ts";
import { html } from "../html.ts";
import { page } from "../layout.ts";

/** The page of a transaction, found by raw hash or by txid. */
export async function tx(ctx: PageContext, rest: string): Promise<Answer> {
  if (!/^[0-9a-f]{64}$/.test(rest)) throw malformed("transaction", rest, "64 lowercase hex");
  const indexed = ctx.index.tx(rest);
  const where = indexed ?? await ctx.source.tx(rest);
  if (!where) throw unknown("transaction", rest);
  const record = await ctx.source.block(where.height);
  const envelope = record && Array.isArray(record.block.txs) ? record.block.txs[where.index] : undefined;
  if (!record || !isObject(envelope)) throw unknown("transaction", rest);
  const body = isObject(envelope.body) ? envelope.body : {} as JsonObject;
  const result = record.results[where.index] ?? { ok: false };
  const hash = sha256Hex(canonicalBytes(envelope));
  const summary = ctx.index.tx(hash);
  const out = html`<table class="facts">
<tr><th>raw hash</th><td><code>${hash}</code></td></tr>
<tr><th>txid</th><td><code>${summary?.txid ?? "—"}</code></td></tr>
<tr><th>kind</th><td><b>${String(body.kind)}</b></td></tr>
<tr><th>block</th><td>${blockLink(where.height)} (position ${where.index})</td></tr>
<tr><th>sender</th><td>${accountLink(String(envelope.public_key), String(envelope.public_key))}</td></tr>
<tr><th>nonce</th><td>${String(body.nonce)}</td></tr>
<tr><th>result</th><td>${
    result.ok
      ? html`<span class="ok">accepted</span>`
      : html`<span class="bad">rejected</span> · error code <code class="code">${result.code ?? "?"}</code>`
  }</td></tr>
${
    result.ok ? "" : html`
      <tr>
        <th>message</th>
        <td class="reason">${result.message ?? ""}</td>
      </tr>
    `
  }
${
    summary?.claim_id
      ? html`
        <tr>
          <th>claim</th>
          <td>${claimLink(summary.claim_id, summary.claim_id)}</td>
        </tr>
      `
      : ""
  }
${
    summary?.bytes != null
      ? html`
        <tr>
          <th>chunk bytes</th>
          <td>${summary.bytes.toLocaleString("en-US")}</td>
        </tr>
      `
      : ""
  }
</table>
<h2>Decoded body</h2>
${jsonView(body)}`;
  return { kind: "html", body: page(ctx.index, `Transaction ${hash.slice(0, 12)}…`, out) };
}
