/**
 * The explorer's routes. Every route is a `GET` (or `HEAD`) that reads; any other method is 405. Ids in paths
 * are checked before anything is read: a malformed one is 400, an unknown one 404.
 *
 * | path | page |
 * |---|---|
 * | `/` | chain head, money and training counts, the newest blocks (live) |
 * | `/blocks?before=H`, `/block/<height>` | block list, one block |
 * | `/tx/<raw hash or txid>` | one transaction: decoded body, result, error code |
 * | `/training`, `/claim/<id>` | every claim with loss, outcome, reward and the loss chart; one claim |
 * | `/disputes` | every challenge: challenger, stage, bytes and chunks, blocks taken, verdict, slash |
 * | `/data`, `/evaluation`, `/inference` | the other lifecycles (empty sections until the ledger has them) |
 * | `/accounts`, `/account/<id>`, `/validators`, `/model/<root>` | balances, bonds, power; a manifest |
 * | `/id/<hex>` | redirects to whatever the id names |
 * | `/api/blocks?after=H`, `/api/status` | JSON for the live block list |
 */
import { type Answer, malformed, type PageContext, PageError, unknown } from "./answer.ts";
import { accountPage, accounts, model, validators } from "./pages/accounts.ts";
import { apiBlocks, block, blocks, home } from "./pages/chain.ts";
import { disputes } from "./pages/disputes.ts";
import { data } from "./pages/data.ts";
import { evaluation } from "./pages/evaluation.ts";
import { inference } from "./pages/inference.ts";
import { claim, training } from "./pages/training.ts";
import { tx } from "./pages/tx.ts";

type Route = (ctx: PageContext, rest: string) => Answer | Promise<Answer>;

const EXACT: Record<string, Route> = {
  "/": home,
  "/blocks": blocks,
  "/training": training,
  "/disputes": disputes,
  "/data": data,
  "/evaluation": evaluation,
  "/inference": inference,
  "/accounts": accounts,
  "/validators": validators,
  "/api/blocks": apiBlocks,
  "/api/status": (ctx) => ({ kind: "json", body: { head: ctx.index.head, indexed: ctx.index.scanned } }),
};

const PREFIX: Record<string, Route> = {
  block,
  tx,
  claim,
  account: accountPage,
  model,
  id: resolveId,
};

/** Where a page of a given id is: `/id/<hex>` redirects there (a redirect is an answer with `location`). */
export class Redirect extends Error {
  constructor(readonly location: string) {
    super(location);
  }
}

function resolveId(ctx: PageContext, rest: string): Answer {
  if (/^0[23][0-9a-f]{64}$/.test(rest)) throw new Redirect(`/account/${rest}`);
  if (/^[1-9][0-9]{0,15}$/.test(rest)) throw new Redirect(`/block/${rest}`);
  if (!/^[0-9a-f]{64}$/.test(rest)) throw malformed("id", rest, "64 or 66 lowercase hex, or a height");
  if (ctx.index.claim(rest)) throw new Redirect(`/claim/${rest}`);
  const t = ctx.index.tx(rest);
  if (t) throw new Redirect(`/tx/${t.hash}`);
  throw new Redirect(`/model/${rest}`);
}

/** Finds the route of `pathname`; a 404 `PageError` when there is none. */
export function route(pathname: string): { handler: Route; rest: string } {
  const exact = EXACT[pathname];
  if (exact) return { handler: exact, rest: "" };
  const m = /^\/([a-z]+)\/([^/]*)$/.exec(pathname);
  const handler = m ? PREFIX[m[1]!] : undefined;
  if (!m || !handler) throw new PageError(404, `Cannot show ${pathname.slice(0, 80)}: no such page`);
  let rest: string;
  try {
    rest = decodeURIComponent(m[2]!);
  } catch {
    throw malformed(m[1]!, m[2]!, "an id");
  }
  return { handler, rest };
}

export { unknown };
