/**
 * How the explorer writes values: links for every kind of id (block, transaction, claim, account, model),
 * atoms with their NEURO value, times, losses from hex floats, and a bounded generic view of any JSON value
 * (used for decoded transaction bodies and for lifecycles whose pages know no fixed shape yet).
 */
import { isObject, type JsonValue } from "../core/canonical.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import { type Html, html } from "./html.ts";

const HEX64 = /^[0-9a-f]{64}$/;
const ACCOUNT = /^0[23][0-9a-f]{64}$/;

/** The first 12 characters of an id, for tables. */
export function short(idText: string): string {
  return idText.length > 16 ? `${idText.slice(0, 12)}…` : idText;
}

/** A link to a block. */
export function blockLink(height: number): Html {
  return html`<a href="/block/${height}">${height}</a>`;
}

/** A link to a transaction by raw hash. */
export function txLink(hash: string, label: string = short(hash)): Html {
  return html`<a class="id" href="/tx/${hash}" title="${hash}">${label}</a>`;
}

/** A link to a claim. */
export function claimLink(claimId: string, label: string = short(claimId)): Html {
  return html`<a class="id" href="/claim/${claimId}" title="${claimId}">${label}</a>`;
}

/** A link to an account. */
export function accountLink(account: string, label: string = short(account)): Html {
  return html`<a class="id" href="/account/${account}" title="${account}">${label}</a>`;
}

/** A link to a model manifest. */
export function modelLink(root: string | null): Html {
  return root === null
    ? html`—`
    : html`<a class="id" href="/model/${root}" title="${root}">${short(root)}</a>`;
}

/** A link to whatever a 64-hex id names (resolved by `/id/<hex>`), or a validator key's row. */
export function idLink(value: string): Html {
  if (ACCOUNT.test(value)) return accountLink(value);
  return html`<a class="id" href="/id/${value}" title="${value}">${short(value)}</a>`;
}

/** `1,234,567 atoms (1.234567 NEURO)`. */
export function atoms(n: number): Html {
  const neuro = (n / 1_000_000).toFixed(6);
  return html`<span class="atoms" title="${neuro} NEURO">${n.toLocaleString("en-US")} atoms</span>`;
}

/** A block time (ms since the epoch) as UTC. */
export function time(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "—";
}

/** A hex-float loss as a decimal with 4 places (the hex spelling in the title). */
export function loss(hex: string | null): Html {
  if (hex === null) return html`—`;
  try {
    return html`<span class="loss" title="${hex}">${fromHexFloat(hex).toFixed(4)}</span>`;
  } catch {
    return html`<span class="loss">${hex}</span>`;
  }
}

/** A string cut to `max` characters, saying how long it was. */
export function clip(text: string, max = 160): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}… (${text.length.toLocaleString("en-US")} characters)`;
}

/** A generic, bounded view of a JSON value: objects as tables, ids as links, long strings cut. */
export function jsonView(value: JsonValue, depth = 0, budget = { cells: 2_000 }): Html {
  if (budget.cells-- <= 0) return html`<span class="muted">…</span>`;
  if (value === null) return html`<span class="muted">null</span>`;
  if (typeof value === "string") {
    if (ACCOUNT.test(value) || HEX64.test(value)) return idLink(value);
    return html`<span class="str">${clip(value)}</span>`;
  }
  if (typeof value !== "object") return html`<span class="num">${String(value)}</span>`;
  if (depth >= 6) {
    return html`<span class="muted">(nested ${Array.isArray(value) ? "array" : "object"})</span>`;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return html`<span class="muted">[]</span>`;
    const shown = value.slice(0, 64);
    const more = value.length - shown.length;
    return html`<ol class="json" start="0">${
      shown.map((v) => html`<li>${jsonView(v, depth + 1, budget)}</li>`)
    }${more > 0 ? html`<li class="muted">… ${more} more</li>` : ""}</ol>`;
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return html`<span class="muted">{}</span>`;
  const shown = entries.slice(0, 64);
  return html`<table class="json">${
    shown.map(([k, v]) =>
      html`
        <tr>
          <th>${k}</th>
          <td>${jsonView(v, depth + 1, budget)}</td>
        </tr>
      `
    )
  }${
    entries.length > 64
      ? html`
        <tr>
          <td colspan="2" class="muted">… ${entries.length - 64} more</td>
        </tr>
      `
      : ""
  }</table>`;
}

/** True for a JSON object (re-exported for pages). */
export { isObject };
