/** The chain pages: the head with a live-updating block list, a page of older blocks, and one block. */
import { canonicalBytes, isObject, type JsonObject } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import type { BlockSummary } from "../chain_index.ts";
import { type Answer, malformed, type PageContext, unknown } from "../answer.ts";
import { accountLink, atoms, blockLink, short, time, txLink } from "../format.ts";
import { type Html, html } from "../html.ts";
import { page } from "../layout.ts";
import { listTable, txOutcome } from "../tables.ts";

/** Blocks shown per list page and per live update. */
export const BLOCKS_PER_PAGE = 50;

/** One block row (the same columns the live script fills in). */
export function blockRow(b: BlockSummary): Html {
  return html`
    <tr data-height="${b.height}">
      <td>${blockLink(b.height)}</td>
      <td>${time(b.time)}</td>
      <td>${b.txs}</td>
      <td><code title="${b.app_hash}">${short(b.app_hash)}</code></td>
      <td>${b.committers === null ? html`<span class="muted">pending</span>` : b.committers.length}</td>
    </tr>
  `;
}

function blockTable(blocks: BlockSummary[], live: boolean): Html {
  return listTable(
    ["height", "time (UTC)", "txs", "app hash", "committers"],
    blocks.map(blockRow),
    live ? "live-blocks" : undefined,
  );
}

/** The block summaries as JSON for the live list (`/api/blocks?after=H`). */
export function apiBlocks(ctx: PageContext): Answer {
  const after = Number(ctx.url.searchParams.get("after") ?? "0");
  if (!Number.isSafeInteger(after) || after < 0) {
    throw malformed("blocks", ctx.url.searchParams.get("after") ?? "", "a height >= 0");
  }
  const i = ctx.index;
  const newest = i.blocks(i.scanned + 1, BLOCKS_PER_PAGE).filter((b) => b.height > after);
  // Committers of the block before the first new one arrive with it: resend that one too.
  const refreshed = after >= 1 ? i.block(after) : null;
  return {
    kind: "json",
    body: {
      head: i.head,
      blocks: [...newest, ...(refreshed ? [refreshed] : [])].map((b) => ({
        ...b,
        time_text: time(b.time),
        app_hash_short: short(b.app_hash),
      })),
    },
  };
}

/** `/`: the head, the money totals and the newest blocks, updated live by the page script. */
export async function home(ctx: PageContext): Promise<Answer> {
  const i = ctx.index;
  const head = i.head!;
  const claims = i.claims();
  const states = await Promise.all(claims.map((c) => ctx.claims.get(c.claim_id)));
  const settled = states.filter((s) => s?.status === "settled").length;
  const rejected = states.filter((s) => s?.status === "rejected").length;
  const lifecycle = await ctx.source.query("/lifecycle");
  const lc = isObject(lifecycle) ? lifecycle : {};
  const supply = await ctx.source.query("/supply").catch(() => null);
  const money = isObject(supply) ? supply : null;
  const body = html`
    <section class="cards">
      <div class="card">
        <h3>Height</h3>
        <p class="big" id="card-height">${head.height}</p>
        <p>${time(head.time)}</p>
      </div>
      <div class="card">
        <h3>Training</h3>
        <p class="big">${settled} settled</p>
        <p>${rejected} rejected · round ${String(lc.training_round ?? "—")}</p>
      </div>
      <div class="card">
        <h3>Transactions</h3>
        <p class="big">${i.txCount}</p>
        <p>${claims.length} claims · ${i.accounts().length} accounts</p>
      </div>
      <div class="card" id="money">
        <h3>Money</h3>
        ${money
          ? html`
            <p class="big">${atoms(
              Number(money.genesis_supply) + Number(money.issued) - Number(money.burned),
            )}</p>
            <p>genesis ${atoms(Number(money.genesis_supply))}</p>
            <p>issued ${atoms(Number(money.issued))} · burned ${atoms(Number(money.burned))}</p>
          `
          : html`<p class="muted">this validator has no /supply query</p>`}
      </div>
      <div class="card">
        <h3>Genesis</h3>
        <p><code title="${head.genesis_id}">${short(head.genesis_id)}</code></p>
        <p>app hash <code title="${head.app_hash}">${short(head.app_hash)}</code></p>
      </div>
    </section>
    <h2>Latest blocks <span class="muted live-note">(updates live)</span></h2>
    ${blockTable(i.blocks(i.scanned + 1, 20), true)}
    <p><a href="/blocks">all blocks</a></p>
  `;
  return { kind: "html", body: page(i, "Chain", body) };
}

/** `/blocks?before=H`: a page of older blocks, newest first. */
export function blocks(ctx: PageContext): Answer {
  const i = ctx.index;
  const raw = ctx.url.searchParams.get("before");
  const before = raw === null ? i.scanned + 1 : Number(raw);
  if (raw !== null && (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(before))) {
    throw malformed("blocks", raw, "a height >= 1");
  }
  const list = i.blocks(before, BLOCKS_PER_PAGE);
  const last = list.at(-1);
  const body = html`<p>${i.scanned} blocks committed and indexed.</p>${blockTable(list, false)}
${last && last.height > 1 ? html`<p><a href="/blocks?before=${last.height}">older blocks</a></p>` : ""}`;
  return { kind: "html", body: page(i, "Blocks", body) };
}

/** `/block/<height>`. */
export async function block(ctx: PageContext, rest: string): Promise<Answer> {
  if (!/^[1-9][0-9]{0,15}$/.test(rest) || !Number.isSafeInteger(Number(rest))) {
    throw malformed("block", rest, "a height >= 1");
  }
  const height = Number(rest);
  const record = await ctx.source.block(height);
  if (!record) throw unknown("block", String(height));
  const b = record.block;
  const txs = (Array.isArray(b.txs) ? b.txs : []) as JsonObject[];
  const summary = ctx.index.block(height);
  const commit = (Array.isArray(b.last_commit) ? b.last_commit : []) as JsonObject[];
  const rows = txs.map((envelope, n) => {
    const body = isObject(envelope.body) ? envelope.body : {};
    const r = record.results[n];
    const hash = sha256Hex(canonicalBytes(envelope));
    return html`
      <tr>
        <td>${n}</td>
        <td>${txLink(hash)}</td>
        <td>${String(body.kind)}</td>
        <td>${accountLink(String(envelope.public_key))}</td>
        <td>${txOutcome(r?.ok === true, r?.code ?? "rejected")}</td>
      </tr>
    `;
  });
  const body = html`
    <table class="facts">
      <tr>
        <th>height</th>
        <td>${height}</td>
      </tr>
      <tr>
        <th>time</th>
        <td>${time(Number(b.time))}</td>
      </tr>
      <tr>
        <th>app hash</th>
        <td><code>${record.app_hash}</code></td>
      </tr>
      <tr>
        <th>previous app hash</th>
        <td><code>${String(b.prev_app_hash)}</code></td>
      </tr>
      <tr>
        <th>transactions</th>
        <td>${txs.length}</td>
      </tr>
      <tr>
        <th>committed by</th>
        <td>${summary?.committers?.length === 0
          ? html`<span class="muted">no attestations</span>`
          : summary?.committers
          ? summary.committers.map((k) =>
            html`
              <a class="id" href="/validators#${k}">${short(k)}</a>
            `
          )
          : html`<span class="muted">not yet attested in a later block</span>`}</td>
      </tr>
      <tr>
        <th>attests block ${height - 1}</th>
        <td>${commit.length} signatures</td>
      </tr>
    </table>
    <p>${height > 1
      ? html`<a href="/block/${height - 1}">← block ${height - 1}</a>`
      : ""} <a href="/block/${height + 1}">block ${height + 1} →</a></p>
    <h2>Transactions</h2>
    ${txs.length === 0
      ? html`<p class="empty">No transactions in this block.</p>`
      : listTable(["#", "hash", "kind", "sender", "result"], rows)}
  `;
  return { kind: "html", body: page(ctx.index, `Block ${height}`, body) };
}
