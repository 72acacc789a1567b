/**
 * How every devnet starts the sponsor (`deno task sponsor`) as a supervised child: the small devnet's scenario,
 * the SmolLM2 scenario and the SmolLM2 worker-kill test run the same command, differing only in what the
 * sponsor is asked to do (`--steps N` or `--grow N`) and its budget.
 *
 * @example
 * ```ts
 * import { sponsorSpec } from "./sponsor_spec.ts";
 * const spec = sponsorSpec({ home: "sponsor", rpc: "http://127.0.0.1:1", workers: "workers.json", budget: 8, work: ["--steps", "1"] });
 * // await sup.start(spec)
 * ```
 */
import type { ChildSpec } from "./supervisor.ts";

/** What the sponsor is started with. */
export interface SponsorStart {
  /** The sponsor's home (key, journal, budget). */
  readonly home: string;
  /** The validator it submits to. */
  readonly rpc: string;
  /** The workers file it places stages on. */
  readonly workers: string;
  /** Attempts it may spend (`--budget`). */
  readonly budget: number;
  /** What it does: `["--steps", "N"]` or `["--grow", "N"]`. */
  readonly work: readonly string[];
}

/** The supervised child `sponsor`, ending by itself, printing JSON lines. */
export function sponsorSpec(s: SponsorStart): ChildSpec {
  return {
    name: "sponsor",
    task: "sponsor",
    listens: false,
    expectsExit: true,
    args: [
      "--home",
      s.home,
      "--rpc",
      s.rpc,
      "--workers",
      s.workers,
      ...s.work,
      "--budget",
      String(s.budget),
      "--json",
    ],
  };
}
