/** The frame of every explorer page: title, navigation, the chain head line and the source in the footer. */
import type { ChainIndex } from "./chain_index.ts";
import { type Html, html } from "./html.ts";
import { blockLink, short, time } from "./format.ts";

const NAV: [string, string][] = [
  ["/", "Chain"],
  ["/training", "Training"],
  ["/disputes", "Disputes"],
  ["/data", "Data"],
  ["/evaluation", "Evaluation"],
  ["/inference", "Inference"],
  ["/accounts", "Accounts"],
  ["/validators", "Validators"],
];

/** A whole page. `scripts` adds the chart library where a page draws one. */
export function page(index: ChainIndex, title: string, body: Html, options: { chart?: boolean } = {}): Html {
  const head = index.head;
  const chain = head
    ? html`<span id="head-line">chain <b>${
      head.chain_id ?? "?"
    }</b> · height <b id="head-height">${head.height}</b>
      · app hash <code id="head-hash" title="${head.app_hash}">${short(head.app_hash)}</code> · ${
      time(head.time)
    }</span>`
    : html`<span>no head yet</span>`;
  return html`
    <!doctype html>
    <html lang="en">
      <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${title} · NeuroShard explorer</title>
    <link rel="stylesheet" href="/assets/explorer.css">
    ${options.chart
      ? html`
        <link rel="stylesheet" href="/assets/uplot.css">
        <script src="/assets/uplot.js"></script>
      `
      : ""}
      </head>
      <body>
        <header><a class="brand" href="/">NeuroShard explorer</a><nav>${NAV.map(([href, label]) =>
          html`<a href="${href}">${label}</a>`
        )}</nav><div class="head">${chain}</div></header>
        <main><h1>${title}</h1>
    ${body}
        </main>
        <footer>read-only view of ${index.source.description} · indexed to block ${index.scanned > 0
          ? blockLink(index.scanned)
          : "0"}${index.truncated ? " · the oldest entries were dropped at the index bound" : ""}</footer>
        <script src="/assets/explorer.js"></script>
      </body>
    </html>
  `;
}

/** A section that has nothing to show yet. */
export function empty(text: string): Html {
  return html`<p class="empty">${text}</p>`;
}
