/**
 * The Curator on a real network (four validator processes, real SQLite, real HTTP on 127.0.0.1), through
 * `deno task curator` run as processes:
 * - `collect --json` reports each tranche, with an exact duplicate (case, Unicode form, whitespace) and a near
 *   duplicate dropped; a SIGKILL at each journal write point of `collect`, then a restart, leaves the cursor
 *   and the collected set exactly as an uninterrupted curator's;
 * - a source file whose SHA-256 differs from its spec is refused before any row is read, the cursor unchanged;
 * - a proposal with one substituted window is rejected by `review` naming the document, and none of the three
 *   auto-reviewing validators votes for it (it expires);
 * - an honest proposal is approved by the three auto-reviewing validators of four and activates, the cursors
 *   move to the window ends;
 * `NEURO_SLOW=1` runs every crash point of `collect`; the default suite runs three.
 */
import { assertEquals } from "../_assert.ts";
import { getJson, until } from "./_ledger_procs.ts";
import { type CuratorNet, runCurator, startCuratorNet } from "./_curator_net.ts";
import { proposeForged, tranches } from "./_curator_tools.ts";
import { decodeCanonical } from "../../core/canonical.ts";
import { Journal, operationId } from "../../actors/runtime/journal.ts";
import type { ReviewOutcome } from "../../actors/curator/auto_review.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
const COLLECT_POINTS = SLOW
  ? ["begin:1", "step:1", "effect:1", "step:2", "complete:1", "begin:2", "step:4", "complete:3"]
  : ["begin:1", "step:2", "complete:2"];

/**
 * The review an auto-reviewing validator journaled for `proposal` (`HOME/reviewer/journal.sqlite`); null while
 * it is not finished (its result is committed once its vote is confirmed, which may be after the activation).
 */
function reviewOf(home: string, proposal: string): ReviewOutcome | null {
  const j = Journal.open(`${home}/reviewer/journal.sqlite`, { readOnly: true });
  try {
    const op = j.operations().find((o) =>
      o.handler === "review" && o.opId === operationId("review", { proposal })
    );
    if (op?.result === undefined || op.result === null) return null;
    const r = decodeCanonical(op.result) as { ok: boolean; value: ReviewOutcome };
    assertEquals(r.ok, true);
    return r.value;
  } finally {
    j.close();
  }
}

const args = (net: CuratorNet, home: string) => ["--home", home, "--rpc", net.rpc, "--sources", net.sources];
const lines = (out: string) => out.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));

interface ProposalState {
  proposal_id: string;
  state: { status: string; votes: [string, boolean][]; data_root: string };
  document: { windows: { source: string; start: number; end: number }[] };
}

async function collectTwice(net: CuratorNet, home: string, env: Record<string, string> = {}) {
  const first = await runCurator(["collect", ...args(net, home), "--rows", "64", "--json"], env);
  const second = await runCurator(["collect", ...args(net, home), "--rows", "64", "--json"]);
  return { first, second };
}

Deno.test({
  name:
    "Curator: collect, crash-safe cursors, a refused source, a forged window nobody votes for, activation",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const net = await startCuratorNet({
      autoReview: [true, true, true, false],
      curators: 2 + COLLECT_POINTS.length,
      params: { proposal_blocks: 160 },
    });
    try {
      const [honest, other] = net.curators as [string, string];
      await t.step(
        "collect --json reports each tranche; duplicates and near duplicates are dropped",
        async () => {
          const { first, second } = await collectTwice(net, honest);
          assertEquals([first.code, second.code], [0, 0], first.stderr + second.stderr);
          assertEquals(lines(first.stdout), [
            { collected: 62, duplicates: 1, near_duplicates: 1, cursor: 64 }, // fixture-train rows 0-63 of 120
            { collected: 40, duplicates: 0, near_duplicates: 0, cursor: 40 },
            { collected: 40, duplicates: 0, near_duplicates: 0, cursor: 40 },
          ]);
          assertEquals(lines(second.stdout), [
            { collected: 56, duplicates: 0, near_duplicates: 0, cursor: 120 },
            { collected: 0, duplicates: 0, near_duplicates: 0, cursor: 40 },
            { collected: 0, duplicates: 0, near_duplicates: 0, cursor: 40 },
          ]);
          const dropped = tranches(honest).flatMap((x) => x.dropped).map((d) => [d.row, d.reason]);
          assertEquals(dropped, [[50, "duplicate"], [61, "near_duplicate"]]);
        },
      );

      await t.step(
        "a SIGKILL at each journal write point of collect, then a restart: the same corpus",
        async () => {
          const expected = tranches(honest);
          for (const [i, point] of COLLECT_POINTS.entries()) {
            const home = net.curators[2 + i]!;
            const { first } = await collectTwice(net, home, { NEURO_CRASH_AT: point });
            assertEquals(first.code === 0, false, `${point} did not crash`);
            // One more run in case the crash came before the second run's tranches were due.
            await runCurator(["collect", ...args(net, home), "--rows", "64", "--json"]);
            assertEquals(tranches(home), expected, point);
          }
        },
      );

      await t.step("a source whose SHA-256 differs is refused before any row is read", async () => {
        await collectTwice(net, other);
        const before = tranches(other);
        const copy = `${net.dir}/changed`;
        await Deno.mkdir(copy);
        for await (const e of Deno.readDir(`${net.dir}/sources`)) {
          await Deno.copyFile(`${net.dir}/sources/${e.name}`, `${copy}/${e.name}`);
        }
        const bytes = await Deno.readFile(`${copy}/fixture-train.jsonl`);
        await Deno.writeFile(
          `${copy}/fixture-train.jsonl`,
          new Uint8Array([...bytes, 0x0a, 0x7b, 0x7d, 0x0a]),
        );
        const r = await runCurator([
          "collect",
          "--home",
          other,
          "--rpc",
          net.rpc,
          "--sources",
          `${copy}/sources.json`,
        ]);
        assertEquals(r.code, 1);
        assertEquals(
          /^error: Cannot open source fixture-train: .* has SHA-256 [0-9a-f]{64}, expected [0-9a-f]{64} \(source_mismatch\)$/
            .test(r.stderr.trim()),
          true,
          r.stderr,
        );
        assertEquals(tranches(other), before);
      });

      await t.step(
        "one substituted window: review names the document, no validator votes, it expires",
        async () => {
          const forged = await proposeForged(other, net.rpc, net.sources);
          const r = await runCurator([
            "review",
            ...args(net, honest),
            "--proposal",
            forged.proposal,
            "--json",
          ]);
          assertEquals(r.code, 0, r.stderr);
          const report = JSON.parse(r.stdout);
          assertEquals(report.verdict, "reject");
          assertEquals(
            report.reasons.map((
              x: { document: string; code: string; source: string; row: number },
            ) => [x.document, x.code, x.source, x.row]),
            [
              [forged.victim.id, "batch_mismatch", forged.victim.source, forged.victim.row],
            ],
          );
          // Every auto-reviewer reviews it and rejects it; none votes; the proposal expires unapproved.
          await until(
            "three reviews",
            () =>
              net.procs.slice(0, 3).every((p) =>
                p.lines.some((l) => l.startsWith(`review ${forged.proposal} reject, no vote`))
              ),
            120_000,
          );
          await until("the forged proposal to expire", async () => {
            const p = await getJson<ProposalState>(`${net.rpc}/data/proposal?id=${forged.proposal}`);
            assertEquals(p.state.votes, []);
            return p.state.status === "expired";
          }, 180_000);
        },
      );

      await t.step("an honest proposal: 3 of 4 validators approve by review and it activates", async () => {
        const r = await runCurator(["propose", ...args(net, honest), "--train", "12", "--json"]);
        assertEquals(r.code, 0, r.stderr);
        const p = JSON.parse(r.stdout);
        assertEquals([p.status, p.documents], ["committed", { retention: 32, fresh: 32, train: 12 }]);
        const rv = JSON.parse(
          (await runCurator(["review", ...args(net, other), "--proposal", p.proposal, "--json"])).stdout,
        );
        // The auto-reviewers' votes may activate the proposal before this review runs (on a loaded machine
        // they did); a review judges against the chain as it is, so an active proposal is not reviewed
        // against the state it was proposed on. Reviewed while pending, it is approved; either way each
        // auto-reviewer's own review (the same code, journaled before its vote) approved it while pending.
        assertEquals([rv.proposal, rv.data_root], [p.proposal, p.data_root]);
        if (rv.status !== "activated") assertEquals([rv.verdict, rv.reasons], ["approve", []]);
        await until("activation", async () => {
          const lc = await getJson<{ data: { cohort: { proposal: string } | null } }>(`${net.rpc}/lifecycle`);
          return lc.data.cohort?.proposal === p.proposal;
        }, 180_000);
        const reviewers = net.procs.slice(0, 3).map((proc) => proc.home);
        await until(
          "three journaled reviews",
          () => reviewers.every((h) => reviewOf(h, p.proposal) !== null),
          120_000,
        );
        for (const home of reviewers) {
          const review = reviewOf(home, p.proposal)!;
          assertEquals(
            [review.report.proposal, review.report.verdict, review.report.reasons, review.vote?.status],
            [p.proposal, "approve", [], "committed"],
            home,
          );
          assertEquals(["proposed", "voting"].includes(review.report.status), true, review.report.status);
        }
        const state = await getJson<ProposalState>(`${net.rpc}/data/proposal?id=${p.proposal}`);
        assertEquals([state.state.status, state.state.votes.length, state.state.votes.every(([, a]) => a)], [
          "activated",
          3,
          true,
        ]);
        const lc = await getJson<{ data: { cursors: Record<string, number>; data_root: string } }>(
          `${net.rpc}/lifecycle`,
        );
        assertEquals(lc.data.data_root, p.data_root);
        assertEquals(
          lc.data.cursors,
          Object.fromEntries(state.document.windows.map((w) => [w.source, w.end])),
        );
        const status = JSON.parse((await runCurator(["status", ...args(net, honest), "--json"])).stdout);
        assertEquals(
          status.sources.map((s: { chain_cursor: number }) => s.chain_cursor),
          ["fixture-train", "fixture-retention", "fixture-fresh"].map((n) => lc.data.cursors[n]),
        );
      });
    } finally {
      await net.stop();
    }
  },
});
