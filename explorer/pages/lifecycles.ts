/**
 * `/data`, `/evaluation` and `/inference`: the lifecycles the ledger may not apply yet. Each page lists the
 * transactions of its kinds found in the blocks and the ledger's answer to its query paths for them (`/data`
 * and `/data/proposal?id=`, `/evaluation`, `/inference?id=<infer txid>`), and shows an empty section while
 * there are none. Where an answer carries the cohort machine's `electorate` and `votes`, the
 * data page draws each owner's vote and power against the 2/3 line.
 */
import { isObject, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import type { Answer, PageContext } from "../answer.ts";
import type { TxSummary } from "../chain_index.ts";
import { accountLink, blockLink, jsonView, txLink } from "../format.ts";
import { type Html, html } from "../html.ts";
import { empty, page } from "../layout.ts";

async function tryQuery(ctx: PageContext, path: string): Promise<JsonValue | null> {
  try {
    return await ctx.source.query(path);
  } catch {
    return null; // a validator without this query answers 404 or an error: the section stays empty
  }
}

function txTable(txs: readonly TxSummary[]): Html {
  return html`
    <table class="list">
      <thead>
        <tr>
          <th>block</th>
          <th>tx</th>
          <th>kind</th>
          <th>sender</th>
          <th>fields</th>
          <th>result</th>
        </tr>
      </thead>
      <tbody>${txs.map((t) =>
        html`
          <tr>
            <td>${blockLink(t.height)}</td>
            <td>${txLink(t.hash)}</td>
            <td>${t.kind}</td>
            <td>${accountLink(t.sender)}</td>
            <td>${jsonView(t.fields)}</td>
            <td>${t.ok
              ? html`<span class="ok">accepted</span>`
              : html`<span class="bad">${t.code}</span>`}</td>
          </tr>
        `
      )}</tbody>
    </table>
  `;
}

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
      <table class="list">
        <thead>
          <tr>
            <th>owner</th>
            <th>power</th>
            <th>vote</th>
          </tr>
        </thead>
        <tbody>${electorate.map(([o, p]) =>
          html`
            <tr>
              <td>${accountLink(String(o))}</td>
              <td>${String(p)}</td>
              <td>${votes.has(o)
                ? (votes.get(o) ? "yes" : "no")
                : html`<span class="muted">not voted</span>`}</td>
            </tr>
          `
        )}</tbody>
      </table>
    </div>
  `;
}

/** Every object inside `value` (depth-first, bounded) that has `electorate` and `votes`. */
function cohortStates(value: JsonValue, out: JsonObject[] = [], depth = 0): JsonObject[] {
  if (depth > 6 || out.length >= 32) return out;
  if (Array.isArray(value)) { for (const v of value) cohortStates(v, out, depth + 1); }
  else if (isObject(value)) {
    if (Array.isArray(value.electorate) && Array.isArray(value.votes)) out.push(value);
    else for (const v of Object.values(value)) cohortStates(v, out, depth + 1);
  }
  return out;
}

async function lifecyclePage(
  ctx: PageContext,
  title: string,
  kinds: readonly string[],
  paths: (txs: readonly TxSummary[]) => readonly string[],
  none: string,
  extra?: (answer: JsonValue) => Html | null,
): Promise<Answer> {
  const txs = ctx.index.txsOfKind(kinds);
  if (txs.length === 0) return { kind: "html", body: page(ctx.index, title, empty(none)) };
  const answers: [string, JsonValue][] = [];
  for (const p of paths(txs).slice(0, 64)) {
    const a = await tryQuery(ctx, p);
    if (a !== null) answers.push([p, a]);
  }
  const body = html`<h2>Transactions (${kinds.join(", ")})</h2>${txTable(txs)}
${answers.map(([p, a]) => html`<h2>Ledger: <code>${p}</code></h2>${extra?.(a) ?? ""}${jsonView(a)}`)}`;
  return { kind: "html", body: page(ctx.index, title, body) };
}

/** `/data`: cohort proposals, per-owner votes and power against the 2/3 line, activation and cursors. */
export function data(ctx: PageContext): Promise<Answer> {
  return lifecyclePage(
    ctx,
    "Data",
    ["propose_data", "vote_data"],
    (
      txs,
    ) => ["/data", ...txs.filter((t) => t.kind === "propose_data").map((t) => `/data/proposal?id=${t.txid}`)],
    "No data cohort on this chain yet: the ledger has no data proposals (this section fills in once propose_data and vote_data are applied).",
    (a) => {
      const states = cohortStates(a);
      return states.length === 0 ? null : html`${states.map((s) => voteTable(s))}`;
    },
  );
}

/** `/evaluation`: per group the paired changes, S, Q, G and pass/fail, and the serving root before and after. */
export function evaluation(ctx: PageContext): Promise<Answer> {
  return lifecyclePage(
    ctx,
    "Evaluation",
    ["open_evaluation", "score", "finish_evaluation"],
    () => ["/evaluation"],
    "No evaluation on this chain yet: the serving root has never been put to the gate.",
  );
}

/** `/inference`: jobs with prompt, answer, tokens, paid and refunded atoms. */
export function inference(ctx: PageContext): Promise<Answer> {
  return lifecyclePage(
    ctx,
    "Inference",
    ["infer", "respond"],
    (txs) => txs.filter((t) => t.kind === "infer" && t.ok).map((t) => `/inference?id=${t.txid}`),
    "No paid inference on this chain yet: nobody has sent an infer transaction.",
  );
}
