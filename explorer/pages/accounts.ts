/** `/accounts`, `/account/<id>`, `/validators` (balances, bonds, power) and `/model/<root>` (a manifest). */
import { isObject, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { type Answer, malformed, type PageContext, unknown } from "../answer.ts";
import { accountLink, atoms, blockLink, claimLink, jsonView, modelLink, short, txLink } from "../format.ts";
import { html } from "../html.ts";
import { empty, page } from "../layout.ts";
import { factsTable, listTable, txOutcome } from "../tables.ts";

/** Accounts shown on one page of `/accounts`. */
export const ACCOUNTS_PER_PAGE = 100;

interface ValidatorRow {
  consensus_key: string;
  owner: string;
  amount: number;
  power: number;
  state: JsonObject;
}

async function validatorRows(ctx: PageContext): Promise<ValidatorRow[]> {
  const v = await ctx.source.query("/validators");
  return isObject(v) && Array.isArray(v.validators) ? v.validators as unknown as ValidatorRow[] : [];
}

async function account(ctx: PageContext, id: string): Promise<{ balance: number; nonce: number }> {
  const a = await ctx.source.query(`/account/${id}`);
  return isObject(a) ? { balance: Number(a.balance), nonce: Number(a.nonce) } : { balance: 0, nonce: 0 };
}

/** `/accounts?page=N`: every account seen on the chain (senders, recipients, workers, validator owners). */
export async function accounts(ctx: PageContext): Promise<Answer> {
  const rawPage = ctx.url.searchParams.get("page") ?? "0";
  if (!/^[0-9]{1,9}$/.test(rawPage)) throw malformed("accounts", rawPage, "a page number >= 0");
  const n = Number(rawPage);
  const owners = (await validatorRows(ctx)).map((v) => v.owner);
  const ids = [...new Set([...owners, ...ctx.index.accounts().map(([a]) => a)])];
  const shown = ids.slice(n * ACCOUNTS_PER_PAGE, (n + 1) * ACCOUNTS_PER_PAGE);
  const rows = [];
  for (const id of shown) {
    const a = await account(ctx, id);
    rows.push(html`
      <tr>
        <td>${accountLink(id, id)}</td>
        <td class="num">${atoms(a.balance)}</td>
        <td>${a.nonce}</td>
        <td>${owners.includes(id) ? "validator owner" : ""}</td>
      </tr>
    `);
  }
  const body = html`
    <p>${ids.length} accounts seen on the chain.</p>
    ${listTable(["account", "balance", "nonce", ""], rows, "accounts")}
    ${(n + 1) * ACCOUNTS_PER_PAGE < ids.length
      ? html`<p><a href="/accounts?page=${n + 1}">more accounts</a></p>`
      : ""}
  `;
  return { kind: "html", body: page(ctx.index, "Accounts", body) };
}

/** `/account/<id>`. */
export async function accountPage(ctx: PageContext, rest: string): Promise<Answer> {
  if (!/^0[23][0-9a-f]{64}$/.test(rest)) {
    throw malformed("account", rest, "66 lowercase hex starting 02 or 03");
  }
  const a = await account(ctx, rest);
  const validators = (await validatorRows(ctx)).filter((v) => v.owner === rest);
  if (!ctx.index.seen(rest) && validators.length === 0 && a.balance === 0 && a.nonce === 0) {
    throw unknown("account", rest);
  }
  const sent = ctx.index.txsOf(rest, 200);
  const claims = ctx.index.claims().filter((c) => c.owner === rest || c.workers.includes(rest));
  const body = html`
    ${factsTable([
      ["account", html`<code>${rest}</code>`],
      ["balance", atoms(a.balance)],
      ["next nonce", a.nonce],
      [
        "bonds",
        validators.length === 0
          ? html`<span class="muted">none</span>`
          : validators.map((v) =>
            html`<div><a class="id" href="/validators#${v.consensus_key}">${short(v.consensus_key)}</a> ${
              atoms(v.amount)
            }, power ${v.power}</div>`
          ),
      ],
    ])}
    <h2>Claims it made or worked on</h2>
    ${claims.length === 0
      ? empty("None.")
      : html`<ul>${
        claims.map((c) =>
          html`<li>${claimLink(c.claim_id)} at block ${blockLink(c.height)} (${
            c.owner === rest ? "owner" : "worker"
          })</li>`
        )
      }</ul>`}
    <h2>Transactions it sent</h2>
    ${sent.length === 0 ? empty("None.") : listTable(
      ["block", "tx", "kind", "nonce", "result"],
      sent.map((t) =>
        html`
          <tr>
            <td>${blockLink(t.height)}</td>
            <td>${txLink(t.hash)}</td>
            <td>${t.kind}</td>
            <td>${t.nonce ?? "—"}</td>
            <td>${txOutcome(t.ok, t.code)}</td>
          </tr>
        `
      ),
    )}
  `;
  return { kind: "html", body: page(ctx.index, `Account ${short(rest)}`, body) };
}

/** `/validators`: consensus keys, owners and their balances, bonds, power and the 2/3 line. */
export async function validators(ctx: PageContext): Promise<Answer> {
  const rows = await validatorRows(ctx);
  const total = rows.reduce((n, v) => n + v.power, 0);
  const out = [];
  for (const v of rows) {
    const a = await account(ctx, v.owner);
    out.push(html`
      <tr id="${v.consensus_key}">
        <td><code title="${v.consensus_key}">${short(v.consensus_key)}</code></td>
        <td>${accountLink(v.owner)}</td>
        <td>${atoms(a.balance)}</td>
        <td>${atoms(v.amount)}</td>
        <td>${v.power}</td>
        <td>${total > 0 ? `${((100 * v.power) / total).toFixed(1)}%` : "—"}</td>
        <td>${String(v.state?.status ?? "?")}</td>
      </tr>
    `);
  }
  const body = html`
    <p>${rows.length} validators · total power ${total} · a decision needs strictly more than ${Math.floor(
      (2 * total) / 3,
    )} (2/3).</p>
    ${listTable(
      ["consensus key", "owner", "owner balance", "bond", "power", "share", "state"],
      out,
      "validators",
    )}
  `;
  return { kind: "html", body: page(ctx.index, "Validators", body) };
}

/** `/model/<root>`: a manifest the ledger knows (the genesis model and every candidate). */
export async function model(ctx: PageContext, rest: string): Promise<Answer> {
  if (!/^[0-9a-f]{64}$/.test(rest)) throw malformed("model", rest, "64 lowercase hex");
  const m = await ctx.source.query(`/manifest?root=${rest}`);
  if (!isObject(m)) throw unknown("model", rest);
  const components = isObject(m.components) ? Object.entries(m.components) : [];
  const body = html`
    ${factsTable([
      ["root", html`<code>${rest}</code>`],
      ["parent", modelLink(typeof m.parent === "string" ? m.parent : null)],
      ["parameters", String(m.parameters ?? "—")],
      ["tokenizer", html`<code>${String(m.tokenizer_root ?? "—")}</code>`],
    ])}
    <h2>Components</h2>
    ${listTable(
      ["component", "root"],
      components.map(([k, v]) =>
        html`
          <tr>
            <td>${k}</td>
            <td><code>${String(v as JsonValue)}</code></td>
          </tr>
        `
      ),
    )}
    <h2>Configuration</h2>${jsonView((m.config ?? null) as JsonValue)}
  `;
  return { kind: "html", body: page(ctx.index, `Model ${short(rest)}`, body) };
}
