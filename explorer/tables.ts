/**
 * The explorer's two table shapes, so every page draws them alike: a list (a header row of column names, then
 * one row per item) and facts (one labelled row per fact); and a transaction's outcome cell.
 *
 * @example
 * ```ts
 * import { factsTable, listTable } from "./tables.ts";
 * import { html } from "./html.ts";
 * listTable(["block", "kind"], [html`<tr><td>3</td><td>claim</td></tr>`], "claims");
 * factsTable([["height", 3], ["txs", 1]]);
 * ```
 */
import { type Html, html } from "./html.ts";

/** A `<table class="list">` (with `id` if given) of `columns` over the rows in `body`. */
export function listTable(columns: readonly string[], body: unknown, id?: string): Html {
  return html`
    <table class="list" ${id === undefined ? "" : html`
      id="${id}"
    `}>
      <thead>
        <tr>${columns.map((c) => html`<th>${c}</th>`)}</tr>
      </thead>
      <tbody>${body}</tbody>
    </table>
  `;
}

/** A `<table class="facts">` of one `<th>label</th><td>value</td>` row per fact. */
export function factsTable(facts: readonly (readonly [string, unknown])[]): Html {
  return html`
    <table class="facts">${facts.map(([label, value]) =>
      html`
        <tr>
          <th>${label}</th>
          <td>${value}</td>
        </tr>
      `
    )}</table>
  `;
}

/** A transaction's outcome: `accepted`, or the code it was refused with. */
export function txOutcome(ok: boolean, code: string | null | undefined): Html {
  return ok ? html`<span class="ok">accepted</span>` : html`<span class="bad">${code}</span>`;
}
