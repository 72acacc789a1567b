/**
 * `/inference`: paid answers (PROTOCOL §8). Every `infer` on the chain with its job from `/inference?id=`:
 * requester, provider, the prompt and the answer (decoded with the model's codec when the explorer has an
 * object store holding it, token ids otherwise), tokens, the price cap, the atoms paid to the provider and
 * refunded to the requester, and the responses and disputes it went through.
 */
import { isObject, type JsonObject } from "../../core/canonical.ts";
import type { Answer, PageContext } from "../answer.ts";
import { accountLink, atoms, blockLink, claimLink, clip, txLink } from "../format.ts";
import { type Html, html } from "../html.ts";
import { empty, page } from "../layout.ts";
import { MAX_LOOKUPS, tryQuery, txTable } from "./_lifecycle.ts";
import { listTable } from "../tables.ts";

/** The generated token ids a response's record states, and whether the last one is the EOS. */
function answerTokens(job: JsonObject): { tokens: number[]; eos: boolean } {
  const state = isObject(job.state) ? job.state : {};
  const response = isObject(state.response) ? state.response : null;
  const metadata = isObject(job.metadata) ? job.metadata : {};
  const record = response && typeof response.record_root === "string" ? metadata[response.record_root] : null;
  if (!isObject(record) || !Array.isArray(record.tokens)) return { tokens: [], eos: false };
  return {
    tokens: record.tokens.filter((t): t is number => typeof t === "number"),
    eos: record.stop === "eos",
  };
}

async function jobRow(ctx: PageContext, txid: string, height: number, hash: string): Promise<Html> {
  const a = await tryQuery(ctx, `/inference?id=${txid}`);
  if (!isObject(a) || !isObject(a.state)) {
    return html`
      <tr>
        <td>${txLink(hash)}</td>
        <td>${blockLink(height)}</td>
        <td colspan="7" class="muted">no longer retained by the ledger</td>
      </tr>
    `;
  }
  const state = a.state;
  const job = isObject(state.job) ? state.job : {};
  const prompt = Array.isArray(job.prompt_ids)
    ? job.prompt_ids.filter((t): t is number => typeof t === "number")
    : [];
  const { tokens, eos } = answerTokens(a);
  const shown = eos ? tokens.slice(0, -1) : tokens;
  const codec = typeof job.model_root === "string" ? await ctx.codecs.forModel(job.model_root) : null;
  const text = (ids: number[]) => {
    if (codec) {
      try {
        return html`<span class="str">${clip(codec.decode(ids), 400)}</span>`;
      } catch {
        // ids outside the vocabulary: shown as ids
      }
    }
    return html`<code>${clip(JSON.stringify(ids), 400)}</code>`;
  };
  const settled = state.status === "settled";
  const response = isObject(state.response) ? state.response : null;
  const price = Number(job.price_per_token ?? 0);
  const paid = settled && response ? Number(response.tokens) * price : 0;
  const ended = settled || state.status === "expired";
  const claims = Array.isArray(a.claims) ? a.claims.filter((c): c is string => typeof c === "string") : [];
  return html`
    <tr class="job-row">
      <td>${txLink(hash)}</td>
      <td>${blockLink(height)}</td>
      <td><span class="${settled ? "ok" : state.status === "expired" ? "bad" : "live"}">${String(
        state.status,
      )}</span></td>
      <td>${accountLink(String(job.requester ?? ""))} → ${accountLink(String(job.provider ?? ""))}</td>
      <td class="prompt">${text(prompt)}</td>
      <td class="answer">${response ? text(shown) : html`<span class="muted">—</span>`}</td>
      <td>${response ? String(response.tokens) : "—"}</td>
      <td>${ended ? atoms(paid) : "—"} paid${ended
        ? html`<br>${atoms(Number(job.max_price ?? 0) - paid)} refunded`
        : ""}</td>
      <td>${claims.map((c) => html`<div>${claimLink(c)}</div>`)}</td>
    </tr>
  `;
}

/** `/inference`. */
export async function inference(ctx: PageContext): Promise<Answer> {
  const txs = ctx.index.txsOfKind(["infer", "respond"]);
  if (txs.length === 0) {
    return {
      kind: "html",
      body: page(
        ctx.index,
        "Inference",
        empty("No paid inference on this chain yet: nobody has sent an infer transaction."),
      ),
    };
  }
  const jobs = txs.filter((t) => t.kind === "infer" && t.ok).slice(-MAX_LOOKUPS).reverse();
  const rows: Html[] = [];
  for (const t of jobs) rows.push(await jobRow(ctx, t.txid, t.height, t.hash));
  const body = html`
    <p>${txs.filter((t) => t.kind === "infer" && t.ok).length} jobs${ctx.codecs.enabled ? "" : html`
      · <span class="muted">start the explorer with --objects DIR to decode prompts and answers</span>
    `}</p>
    ${listTable(
      [
        "job",
        "block",
        "status",
        "requester → provider",
        "prompt",
        "answer",
        "tokens",
        "paid / refunded",
        "responses",
      ],
      rows,
      "jobs",
    )}
    <h2>Transactions (infer, respond)</h2>${txTable(txs)}
  `;
  return { kind: "html", body: page(ctx.index, "Inference", body) };
}
