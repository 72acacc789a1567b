/** `/training` (every claim with its loss, outcome and reward, and the loss-over-rounds chart) and `/claim/<id>`. */
import { isObject, type JsonObject } from "../../core/canonical.ts";
import { fromHexFloat } from "../../core/hex_float.ts";
import { type Answer, malformed, type PageContext, unknown } from "../answer.ts";
import type { ClaimEntry } from "../chain_index.ts";
import { type ClaimState, minted } from "../claim_states.ts";
import { disputesOf } from "../disputes.ts";
import {
  accountLink,
  atoms,
  blockLink,
  claimLink,
  jsonView,
  loss,
  modelLink,
  short,
  txLink,
} from "../format.ts";
import { type Html, html, scriptJson } from "../html.ts";
import { empty, page } from "../layout.ts";
import { disputeTable } from "./disputes.ts";
import { factsTable, listTable, txOutcome } from "../tables.ts";

function outcome(s: ClaimState | null): Html {
  if (!s) return html`<span class="muted">unknown</span>`;
  const cls = s.status === "settled" ? "ok" : s.status === "rejected" ? "bad" : "live";
  return html`<span class="${cls}">${s.status}</span>`;
}

/** The points of the loss chart: one per settled training claim, x = the step its record states. */
export function lossPoints(claims: readonly ClaimEntry[], states: readonly (ClaimState | null)[]): {
  steps: number[];
  losses: number[];
} {
  const steps: number[] = [], losses: number[] = [];
  claims.forEach((c, i) => {
    if (c.kind !== "training" || states[i]?.status !== "settled" || c.loss === null) return;
    try {
      losses.push(fromHexFloat(c.loss));
      steps.push(c.step ?? steps.length);
    } catch {
      // a loss that is not a hex float is shown in the table, not drawn
    }
  });
  return { steps, losses };
}

/** The most claim rows the training page lists (the newest; the chart and the counts cover every claim). */
export const MAX_CLAIM_ROWS = 500;

/** `/training`. */
export async function training(ctx: PageContext): Promise<Answer> {
  const lifecycle = await ctx.source.query("/lifecycle");
  const lc = isObject(lifecycle) ? lifecycle : {} as JsonObject;
  const claims = ctx.index.claims();
  const states = await Promise.all(claims.map((c) => ctx.claims.get(c.claim_id)));
  const points = lossPoints(claims, states);
  const first = Math.max(0, claims.length - MAX_CLAIM_ROWS);
  const rows = claims.slice(first).map((c, j) => {
    const i = first + j;
    const s = states[i]!;
    return html`
      <tr class="claim-row" data-claim="${c.claim_id}">
        <td>${i + 1}</td>
        <td>${claimLink(c.claim_id)}</td>
        <td>${c.kind}</td>
        <td>${blockLink(c.height)}</td>
        <td>${c.step ?? "—"}</td>
        <td>${loss(c.loss)}</td>
        <td>${outcome(s)}</td>
        <td class="reason">${s?.reason ?? ""}</td>
        <td>${s?.status === "settled" ? atoms(minted(s.moves)) : "—"}</td>
        <td>${c.workers.length}</td>
      </tr>
    `;
  });
  const settled = states.filter((s) => s?.status === "settled").length;
  const rejected = states.filter((s) => s?.status === "rejected").length;
  const live = isObject(lc.claim) ? lc.claim : null;
  const body = html`
    <table class="facts">
      <tr>
        <th>training round</th>
        <td>${String(lc.training_round ?? 0)}</td>
      </tr>
      <tr>
        <th>learning root</th>
        <td>${modelLink(typeof lc.learning_root === "string" ? lc.learning_root : null)}</td>
      </tr>
      <tr>
        <th>serving root</th>
        <td>${modelLink(typeof lc.serving_root === "string" ? lc.serving_root : null)}</td>
      </tr>
      <tr>
        <th>schedule</th>
        <td>${String(lc.batches ?? 0)} batches · learning rate ${String(
          lc.learning_rate ?? "—",
        )} · clip ${String(lc.clip ?? "—")}</td>
      </tr>
      <tr>
        <th>live</th>
        <td>${live
          ? html`claim ${claimLink(String(live.claim_id))}`
          : isObject(lc.assignment)
          ? html`assignment reserved by ${accountLink(String(lc.assignment.owner))}`
          : html`<span class="muted">nothing reserved or claimed</span>`}</td>
      </tr>
      <tr>
        <th>claims</th>
        <td id="claim-counts">${claims.length} claims · ${settled} settled · ${rejected} rejected</td>
      </tr>
    </table>
    <h2>Loss over rounds</h2>
    ${points.losses.length === 0
      ? empty("No settled training step yet.")
      : html`<div id="loss-chart" class="chart"></div>
<script type="application/json" id="loss-data">${scriptJson(points)}</script>`}
    <h2>Claims</h2>
    ${claims.length === 0 ? empty("No claim on this chain yet.") : html`
      ${first > 0 ? html`<p class="muted">the newest ${MAX_CLAIM_ROWS} of ${claims.length} claims</p>` : ""}
      ${listTable(
        ["#", "claim", "kind", "block", "step", "loss", "outcome", "reason", "reward", "workers"],
        rows,
        "claims",
      )}
    `}
  `;
  return { kind: "html", body: page(ctx.index, "Training", body, { chart: points.losses.length > 0 }) };
}

/** `/claim/<id>`. */
export async function claim(ctx: PageContext, rest: string): Promise<Answer> {
  if (!/^[0-9a-f]{64}$/.test(rest)) throw malformed("claim", rest, "64 lowercase hex");
  const c = ctx.index.claim(rest);
  const s = await ctx.claims.get(rest);
  if (!c || !s) throw unknown("claim", rest);
  const disputes = disputesOf(c, s);
  const moves = s.moves.map((m) =>
    html`
      <tr>
        <td>${m.op}</td>
        <td>${"account" in m ? accountLink(m.account) : "—"}</td>
        <td>${atoms(m.amount)}</td>
      </tr>
    `
  );
  const body = html`
    ${factsTable([
      ["claim id", html`<code>${c.claim_id}</code>`],
      ["kind", c.kind],
      [
        "outcome",
        html`${outcome(s)}${
          s.reason
            ? html`
              — <span class="reason">${s.reason}</span>
            `
            : ""
        }`,
      ],
      ["transaction", html`${txLink(c.hash)} in block ${blockLink(c.height)}`],
      ["owner", accountLink(c.owner, c.owner)],
      ["step", c.step ?? "—"],
      ["loss", loss(c.loss)],
      ["bond", s.bond === null ? "—" : atoms(s.bond)],
      ["challenge window", s.deadline === null ? "—" : html`until block ${s.deadline}`],
      ["parent model", modelLink(c.parent)],
      ["candidate model", modelLink(c.model_root)],
      ["record root", html`<code>${c.record_root ?? "—"}</code>`],
      ["workers", c.workers.map((w, i) => html`<div>stage ${i}: ${accountLink(w)}</div>`)],
    ])}
    <h2>Money moved by the last transition</h2>
    ${moves.length === 0 ? empty("No movement.") : listTable(["op", "account", "amount"], moves)}
    <h2>Disputes</h2>
    ${disputes.length === 0 ? empty("Nobody challenged this claim.") : disputeTable(disputes, false)}
    <h2>Transactions about this claim</h2>
    ${c.events.length === 0 ? empty("None.") : listTable(
      ["block", "tx", "kind", "sender", "detail", "result"],
      c.events.map((e) =>
        html`
          <tr>
            <td>${blockLink(e.height)}</td>
            <td>${txLink(e.hash)}</td>
            <td>${e.kind}</td>
            <td>${accountLink(e.sender)}</td>
            <td>${e.stage !== null ? `stage ${e.stage} ` : ""}${e.challenge_kind ?? ""}${e.object_root
              ? html`
                object <code>${short(e.object_root)}</code>
              `
              : ""}${e.bytes !== null ? ` ${e.bytes.toLocaleString("en-US")} bytes` : ""}</td>
            <td>${txOutcome(e.ok, e.code)}</td>
          </tr>
        `
      ),
    )}
    <h2>Ledger state</h2>
    ${jsonView(s.state)}
  `;
  return { kind: "html", body: page(ctx.index, `Claim ${short(c.claim_id)}`, body) };
}
