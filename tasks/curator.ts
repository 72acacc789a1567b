/** `deno task curator <collect|propose|review|status>`: run the Curator actor (actors/curator/curator.ts). */
import { canonical } from "../core/canonical.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { openHome } from "../actors/common/home.ts";
import { RpcCuratorChain } from "../actors/curator/chain_data.ts";
import { loadSourcesFile } from "../actors/curator/config.ts";
import { Curator } from "../actors/curator/curator.ts";
import type { ReviewReport } from "../actors/curator/review.ts";
import { isRoot } from "../core/hex.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";

const COMMON = `Options of every command:
  --home DIR        curator directory: account.key (created if missing; fund it before proposing: a proposal
                    locks the claim bond), journal.sqlite, objects/ (must hold the chain's codec)
  --rpc URL         a validator's RPC URL (http://127.0.0.1:PORT)
  --sources FILE    the sources file (default DIR/sources.json): {"sources":[{"file","spec"}], "windows"?}
  --json            machine-readable output
  -h, --help        show this help`;

const HELP = `deno task curator <collect|propose|review|status> --home DIR --rpc URL [options]

Run the Curator: collect documents from pinned source files (JSON Lines or Parquet, each SHA-256 checked
before any row is read) into a corpus registry with durable cursors and deduplication, propose a cohort built
from them (propose_data), review any proposal from your own copy of the raw files, and show where it stands.
Every collected tranche and every proposal is journaled in DIR/journal.sqlite before the cursor advances or
the transaction is sent: killed at any moment and restarted, it never advances a cursor twice, loses a
collected document or proposes twice. Run \`deno task curator <command> --help\` for each command.

${COMMON}`;

const HELPS: Record<string, string> = {
  collect: `deno task curator collect --home DIR --rpc URL [--source NAME] [--rows N] [--json]

Read the next N rows (default 256) of each source (or only NAME) after its cursor (the curator's, or the
chain's when that is further), drop exact duplicates (same normalised-text id), near duplicates (SimHash
within 3 bits) of anything collected before and ids the chain consumed, and rows that are not usable
conversations; journal the tranche, then advance the cursor. With --json, one line per source in the
sources file's order: {"collected":N,"duplicates":N,"near_duplicates":N,"cursor":N}.

${COMMON}`,
  propose: `deno task curator propose --home DIR --rpc URL [--train N] [--json]

Build a cohort from the collected documents at the chain's cursors (32 retention, 32 fresh and up to N train
documents, default 128; roles fixed by source and held-out id; evaluation documents complete), store the
document and its batches in DIR/objects, and submit propose_data through the journaled submitter. Prints the
proposal id, the data root and the outcome. Refused while another proposal is pending.

${COMMON}`,
  review: `deno task curator review --home DIR --rpc URL --proposal ID [--json]

Review proposal ID from your own copy of the raw files: rebuild every document's id, raw object, role and
every window's batch from the rows, check cursors, consumption, counts and the codec against your node's
state, and print the verdict (approve or reject) with a reason per document that is wrong. Exits 0 either
way; nothing is voted (deno task vote does that).

${COMMON}`,
  status: `deno task curator status --home DIR [--rpc URL] [--json]

Show each source's cursor (the curator's and, with --rpc, the chain's), the collected documents, and every
proposal with its outcome.

${COMMON}`,
};

async function main(): Promise<void> {
  const [command, ...rest] = Deno.args;
  if (command === undefined || command === "--help" || command === "-h") return console.log(HELP);
  if (!Object.hasOwn(HELPS, command)) throw new UsageError(`unknown command ${command}`);
  const { values, positionals } = parse(rest, {
    home: { type: "string" },
    rpc: { type: "string" },
    sources: { type: "string" },
    source: { type: "string" },
    rows: { type: "string" },
    train: { type: "string" },
    proposal: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELPS[command]);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const homeDir = required(values.home, "home");
  const allowed: Record<string, string[]> = {
    collect: ["source", "rows"],
    propose: ["train"],
    review: ["proposal"],
    status: [],
  };
  for (const o of ["source", "rows", "train", "proposal"] as const) {
    if (values[o] !== undefined && !allowed[command]!.includes(o)) {
      throw new UsageError(`--${o} is not an option of ${command}`);
    }
  }
  const rows = integerOption(values.rows, "rows", { fallback: 256, max: 4096 });
  const train = integerOption(values.train, "train", { fallback: 128, max: 128 });
  const proposalId = command === "review" ? required(values.proposal, "proposal") : "";
  if (command === "review" && !isRoot(proposalId)) {
    throw new UsageError(`--proposal is ${proposalId}, expected 64 lowercase hex`);
  }
  const rpc = command === "status" ? values.rpc : required(values.rpc, "rpc");
  const config = await loadSourcesFile(values.sources ?? `${homeDir.replace(/\/+$/, "")}/sources.json`);
  const home = await openHome(homeDir);
  try {
    const chain = new RpcCuratorChain(new ChainClient(rpc ?? "http://127.0.0.1:1"));
    const curator = await Curator.open({ home, config, chain });
    const out = (json: unknown, text: string) => console.log(values.json ? canonical(json) : text);
    if (command === "collect") {
      const names = values.source === undefined ? config.sources.map((s) => s.spec.name) : [values.source];
      for (const name of names) {
        const r = await curator.collect(name, rows);
        const { source: _s, start, ...report } = r;
        out(
          report,
          `${name}: rows ${start}-${r.cursor - 1}: collected ${r.collected}, duplicates ${r.duplicates}, ` +
            `near duplicates ${r.near_duplicates}, cursor ${r.cursor}`,
        );
      }
    } else if (command === "propose") {
      const p = await curator.propose(train);
      out(
        p,
        `proposal ${p.proposal} data_root ${p.data_root}: ${p.status}${
          p.height === null ? "" : ` at height ${p.height}`
        }` +
          `${
            p.code ? ` (${p.code}: ${p.message})` : ""
          }; ${p.documents.retention} retention, ${p.documents.fresh} ` +
          `fresh, ${p.documents.train} train documents; windows ${
            p.windows.map((w) => `${w.source} ${w.start}-${w.end - 1}`).join(", ")
          }`,
      );
      if (p.status === "rejected") Deno.exitCode = 1;
    } else if (command === "review") {
      const report = await curator.review(proposalId);
      out(report, formatReview(report));
    } else {
      const corpus = curator.corpus();
      const facts = rpc === undefined ? null : await chain.facts();
      const sources = config.sources.map((s) => ({
        source: s.spec.name,
        role: s.spec.role,
        cursor: corpus.cursor(s.spec.name),
        chain_cursor: facts === null ? null : facts.cursors[s.spec.name] ?? 0,
        collected: corpus.documents.filter((d) => d.source === s.spec.name).length,
      }));
      const proposals = curator.proposals();
      out(
        { sources, collected: corpus.documents.length, proposals },
        [
          ...sources.map((s) =>
            `${s.source} (${s.role}): cursor ${s.cursor}${
              s.chain_cursor === null ? "" : `, chain ${s.chain_cursor}`
            }, ` +
            `${s.collected} collected`
          ),
          `${corpus.documents.length} documents collected`,
          ...proposals.map((p) => `proposal ${p.proposal} data_root ${p.data_root}: ${p.status}`),
        ].join("\n"),
      );
    }
  } finally {
    home.journal.close();
  }
}

/** The review report as text lines. */
function formatReview(r: ReviewReport): string {
  const lines = [`proposal ${r.proposal} (${r.status}) data_root ${r.data_root}: ${r.verdict}`];
  lines.push(`${r.documents} documents, ${r.batches} batches rebuilt from the raw files`);
  for (const x of r.reasons) {
    lines.push(
      `  ${
        x.document === null ? "cohort" : `document ${x.document} (${x.source} row ${x.row})`
      }: ${x.code}: ${x.message}`,
    );
  }
  return lines.join("\n");
}

if (import.meta.main) await runTask("curator", main);
