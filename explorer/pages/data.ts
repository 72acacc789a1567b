/**
 * `/data`: the data lifecycle (PROTOCOL §6). The data root and every source's cursor (from `/lifecycle`), the
 * active cohort and its schedule position, every proposal (from `propose_data` transactions and
 * `/data/proposal?id=`) with its windows, documents by role, status, and each owner's vote and power against
 * the 2/3 line, and the votes as sent.
 */
import { isObject, type JsonObject } from "../../core/canonical.ts";
import type { Answer, PageContext } from "../answer.ts";
import { accountLink, blockLink, idLink, short } from "../format.ts";
import { type Html, html } from "../html.ts";
import { empty, page } from "../layout.ts";
import { MAX_LOOKUPS, tryQuery, txTable } from "./_lifecycle.ts";
import { factsTable, listTable } from "../tables.ts";

/** Each owner's vote and power against the 2/3 line, from a cohort state's `electorate` and `votes`. */
export function voteTable(state: JsonObject): Html | null {
  if (!Array.isArray(state.electorate) || !Array.isArray(state.votes)) return null;
  const electorate = state.electorate.filter(Array.isArray) as unknown as [string, number][];
  const votes = new Map(
    (state.votes.filter(Array.isArray) as unknown as [string, boolean][]).map(([o, a]) => [o, a]),
  );
  const total = electorate.reduce((n, [, p]) => n + Number(p), 0);
  const yes = electorate.reduce((n, [o, p]) => n + (votes.get(o) === true ? Number(p) : 0), 0);
  const pct = (n: number) => (total > 0 ? (100 * n) / total : 0);
  return html`
    <div class="votes">
      <div class="bar">
        <div class="yes" style="width:${pct(yes).toFixed(1)}%"></div>
        <div class="line" style="left:66.667%" title="2/3"></div>
      </div>
      <p>yes ${yes} of ${total} power (${pct(yes).toFixed(
        1,
      )}%); activation needs strictly more than 2/3: ${3 * yes > 2 * total
        ? html`<span class="ok">reached</span>`
        : html`<span class="live">not reached</span>`}</p>
      ${listTable(
        ["owner", "power", "vote"],
        electorate.map(([o, p]) =>
          html`
            <tr>
              <td>${accountLink(String(o))}</td>
              <td>${String(p)}</td>
              <td>${votes.has(o)
                ? (votes.get(o) ? "yes" : "no")
                : html`<span class="muted">not voted</span>`}</td>
            </tr>
          `
        ),
      )}
    </div>
  `;
}

function proposal(id: string, answer: JsonObject): Html {
  const state = isObject(answer.state) ? answer.state : {};
  const doc = isObject(answer.document) ? answer.document : {};
  const windows = Array.isArray(doc.windows) ? doc.windows.filter(isObject) : [];
  const docs = Array.isArray(doc.documents) ? doc.documents.filter(isObject) : [];
  const roles = new Map<string, number>();
  for (const d of docs) roles.set(String(d.role), (roles.get(String(d.role)) ?? 0) + 1);
  return html`
    <section class="proposal"
      id="${id}"><h3>Proposal <code>${short(id)}</code> · <span class="${state.status === "activated"
        ? "ok"
        : state.status === "expired"
        ? "bad"
        : "live"}">${String(state.status ?? "?")}</span></h3>
    ${factsTable([
      ["proposer", accountLink(String(state.proposer ?? ""))],
      ["data root", idLink(String(state.data_root ?? ""))],
      [
        "proposed at",
        html`${typeof state.proposed === "number" ? blockLink(state.proposed) : "—"}, expires after ${
          String(state.expires ?? "—")
        }`,
      ],
      [
        "windows",
        windows.map((w) => html`<div>${String(w.source)}: rows ${String(w.start)}–${String(w.end)}</div>`),
      ],
      ["documents", [...roles].map(([r, n]) => `${n} ${r}`).join(" · ") || "—"],
      ["train batches", Array.isArray(state.train_batches) ? state.train_batches.length : "—"],
    ])}
    ${voteTable(state) ?? ""}</section>
  `;
}

/** `/data`. */
export async function data(ctx: PageContext): Promise<Answer> {
  const txs = ctx.index.txsOfKind(["propose_data", "vote_data"]);
  const lifecycle = await tryQuery(ctx, "/lifecycle");
  const d = isObject(lifecycle) && isObject(lifecycle.data) ? lifecycle.data : null;
  const proposals = txs.filter((t) => t.kind === "propose_data" && t.ok).slice(-MAX_LOOKUPS);
  if (txs.length === 0 && (d === null || d.cohort === null)) {
    return {
      kind: "html",
      body: page(
        ctx.index,
        "Data",
        empty(
          "No data cohort on this chain yet: nobody has proposed one (propose_data) or the genesis schedule is still in use.",
        ),
      ),
    };
  }
  const shown: Html[] = [];
  for (const p of proposals.reverse()) {
    const a = await tryQuery(ctx, `/data/proposal?id=${p.txid}`);
    if (isObject(a)) shown.push(proposal(p.txid, a));
  }
  const cohort = d && isObject(d.cohort) ? d.cohort : null;
  const cursors = d && isObject(d.cursors) ? Object.entries(d.cursors) : [];
  const body = html`
    ${factsTable([
      ["data root", d ? idLink(String(d.data_root)) : "—"],
      ["pending proposal", d && typeof d.proposal === "string" ? idLink(d.proposal) : "none"],
      [
        "cohort",
        cohort
          ? html`${String(cohort.status)} · activated at ${blockLink(Number(cohort.activated))} · step ${
            String(cohort.position)
          } of ${String(cohort.steps)} · deadline ${String(cohort.deadline)}`
          : "none active",
      ],
      [
        "cursors",
        cursors.length === 0
          ? "—"
          : cursors.map(([source, at]) => html`<div>${source}: row ${String(at)}</div>`),
      ],
    ])}
    <h2>Proposals</h2>${shown.length === 0 ? empty("No proposal the ledger still knows.") : shown}
    <h2>Transactions (propose_data, vote_data)</h2>${txs.length === 0 ? empty("None.") : txTable(txs)}
  `;
  return { kind: "html", body: page(ctx.index, "Data", body) };
}
