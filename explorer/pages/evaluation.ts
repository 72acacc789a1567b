/**
 * `/evaluation`: the serving decision (PROTOCOL §7), from `/evaluation`. For the live evaluation and every
 * retained one: the baseline (the serving root before) and the candidate, how many windows of each group have
 * settled, and once decided whether the candidate was promoted (the serving root after), and per group the
 * paired changes d_i = q(candidate_i) − q(baseline_i), S, Q, G, the mean change and pass or fail.
 */
import { isObject, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import type { Answer, PageContext } from "../answer.ts";
import { blockLink, loss, modelLink, short } from "../format.ts";
import { type Html, html } from "../html.ts";
import { empty, page } from "../layout.ts";
import { tryQuery, txTable } from "./_lifecycle.ts";
import { factsTable, listTable } from "../tables.ts";

const root = (v: JsonValue | undefined) => (typeof v === "string" ? v : null);

function gateTable(role: string, g: JsonObject): Html {
  const base = Array.isArray(g.baseline) ? g.baseline : [];
  const cand = Array.isArray(g.candidate) ? g.candidate : [];
  const rows = base.map((b, i) => {
    const c = cand[i];
    const bq = isObject(b) ? BigInt(String(b.q)) : null;
    const cq = isObject(c) ? BigInt(String(c.q)) : null;
    return html`
      <tr>
        <td>${i}</td>
        <td>${isObject(b) ? loss(String(b.loss)) : "—"}</td>
        <td>${isObject(c) ? loss(String(c.loss)) : "—"}</td>
        <td class="num">${bq !== null && cq !== null ? (cq - bq).toString() : "—"}</td>
      </tr>
    `;
  });
  return html`
    <h3>${role}: <span class="${g.pass ? "ok" : "bad"}">${g.pass ? "pass" : "fail"}</span></h3>
    ${factsTable([
      ["S", String(g.S)],
      ["Q", String(g.Q)],
      ["G", String(g.G)],
      ["n", String(g.n)],
      ["mean change", html`${String(g.mean_change_micronats)} micronats per document`],
    ])}
    <details>
      <summary>paired changes of the ${base.length} documents</summary>
      ${listTable(["document", "baseline loss", "candidate loss", "d (micronats)"], rows)}
    </details>
  `;
}

function run(r: JsonObject): Html {
  const decision = isObject(r.decision) ? r.decision : null;
  const gate = decision && isObject(decision.gate) ? decision.gate : {};
  const groups = isObject(r.groups) ? Object.entries(r.groups) : [];
  const after = decision ? (decision.promoted ? root(r.candidate) : root(r.baseline)) : null;
  return html`<section class="evaluation"><h3>Evaluation <code>${short(String(r.evaluation_id))}</code> · ${
    String(r.status)
  }</h3>${
    factsTable([
      ["cohort", modelLinkOrId(r.cohort)],
      [
        "opened",
        html`${typeof r.opened === "number" ? blockLink(r.opened) : "—"}${
          typeof r.ended === "number" ? html`, ended ${blockLink(r.ended)}` : ""
        }`,
      ],
      ["serving root before", modelLink(root(r.baseline))],
      ["candidate", modelLink(root(r.candidate))],
      [
        "windows settled",
        groups.map(([g, v]) =>
          html`<div>${g}: ${isObject(v) ? `${String(v.settled)} of ${String(v.total)}` : "?"}</div>`
        ),
      ],
      [
        "decision",
        decision
          ? html`<span class="${decision.promoted ? "ok" : "bad"}">${
            decision.promoted ? "promoted" : "not promoted"
          }</span> — <span class="reason">${String(decision.reason ?? "")}</span>`
          : html`<span class="muted">not decided yet</span>`,
      ],
      ["serving root after", after ? modelLink(after) : "—"],
    ])
  }
${Object.entries(gate).map(([role, g]) => (isObject(g) ? gateTable(role, g) : ""))}</section>`;
}

function modelLinkOrId(v: JsonValue | undefined): Html {
  return typeof v === "string" ? html`<code title="${v}">${short(v)}</code>` : html`—`;
}

/** `/evaluation`. */
export async function evaluation(ctx: PageContext): Promise<Answer> {
  const txs = ctx.index.txsOfKind(["open_evaluation", "score", "finish_evaluation"]);
  const a = await tryQuery(ctx, "/evaluation");
  const runs = isObject(a)
    ? [...(isObject(a.live) ? [a.live] : []), ...(Array.isArray(a.recent) ? a.recent : [])]
    : [];
  if (txs.length === 0 && runs.length === 0) {
    return {
      kind: "html",
      body: page(
        ctx.index,
        "Evaluation",
        empty("No evaluation on this chain yet: the serving root has never been put to the gate."),
      ),
    };
  }
  const serving = isObject(a) && isObject(a.serving) ? a.serving : null;
  const body = html`
    ${factsTable([
      [
        "serving",
        serving
          ? html`${modelLink(root(serving.model_root))} since block ${String(serving.since)}${
            typeof serving.evaluation === "string"
              ? html`
                (promoted by <code>${short(serving.evaluation)}</code>)
              `
              : " (genesis model)"
          }`
          : "—",
      ],
    ])}
    ${runs.filter(isObject).map(run)}
    <h2>Transactions (open_evaluation, score, finish_evaluation)</h2>${txs.length === 0
      ? empty("None.")
      : txTable(txs)}
  `;
  return { kind: "html", body: page(ctx.index, "Evaluation", body) };
}
