/** `/disputes`: every challenge on the chain with its challenger, stage, uploads, blocks taken, verdict and slash. */
import type { Answer, PageContext } from "../answer.ts";
import { type Dispute, disputesOf } from "../disputes.ts";
import { accountLink, atoms, blockLink, claimLink } from "../format.ts";
import { type Html, html } from "../html.ts";
import { empty, page } from "../layout.ts";

/** The dispute table (with the claim column on the all-disputes page). */
export function disputeTable(disputes: readonly Dispute[], withClaim: boolean): Html {
  return html`
    <table class="list" id="disputes">
      <thead>
        <tr>${withClaim ? html`<th>claim</th>` : ""}<th>challenger</th>
    <th>kind</th><th>stage</th><th>challenged at</th><th>chunks</th><th>bytes uploaded</th><th>blocks taken</th>
    <th>verdict</th><th>slash</th></tr>
      </thead>
      <tbody>${disputes.map((d) =>
        html`<tr class="dispute-row">${withClaim ? html`<td>${claimLink(d.claim_id)}</td>` : ""}<td>${
          accountLink(d.challenger)
        }</td>
<td>${d.challenge_kind}</td><td>${d.stage ?? "—"}</td><td>${
          blockLink(d.challenge_height)
        }</td><td>${d.chunks}</td>
<td class="bytes" data-bytes="${d.bytes}">${
          d.bytes.toLocaleString("en-US")
        }</td><td>${d.blocks} (${d.challenge_height}→${d.last_height})</td>
<td class="reason">${d.verdict}</td><td>${
          d.slash
            ? html`${atoms(d.slash.bond)}: ${atoms(d.slash.challenger)} to the challenger, ${
              atoms(d.slash.burned)
            } burned`
            : "—"
        }</td></tr>`
      )}</tbody>
    </table>
  `;
}

/** `/disputes`. */
export async function disputes(ctx: PageContext): Promise<Answer> {
  const all: Dispute[] = [];
  for (const c of ctx.index.claims()) {
    if (!c.events.some((e) => e.kind === "challenge" && e.ok)) continue;
    all.push(...disputesOf(c, await ctx.claims.get(c.claim_id)));
  }
  const body = all.length === 0
    ? empty("Nobody has challenged a claim on this chain.")
    : html`<p>${all.length} disputes · ${
      all.reduce((n, d) => n + d.bytes, 0).toLocaleString("en-US")
    } bytes uploaded in ${all.reduce((n, d) => n + d.chunks, 0)} chunks.</p>${disputeTable(all, true)}`;
  return { kind: "html", body: page(ctx.index, "Disputes", body) };
}
