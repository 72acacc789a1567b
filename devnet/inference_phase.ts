/**
 * The devnet's paid-inference phase, after training: starts a Provider (`provider/`) and, when the scenario
 * forges, a second one with `--forge token` (`provider-forger/`); the client (`client/`) buys two answers
 * from the honest provider and one from the forging one. The referee (already running) checks every response,
 * gets the forged one refuted through its head stage, and the forging provider's retry (honest) settles.
 *
 * Each question is paid under a fixed idempotency key (`devnet-<n>`) and its job id is journaled in
 * `<devnet>/inference.json` before the phase waits on it, so a devnet killed during the phase resumes the
 * same jobs and pays nothing twice; the summary reads every job back from the chain. `payAnswers` returns
 * once the questions are paid for and follows the jobs in the background (the small devnet trains its next
 * epoch meanwhile); `runInferencePhase` waits for them.
 *
 * @example
 * ```ts
 * import { payAnswers, runInferencePhase } from "./inference_phase.ts";
 * // await runInferencePhase(sup, layout, rpc, true, say);
 * // const answers = await payAnswers(sup, layout, rpc, true, say);
 * // ... train the next epoch ...
 * // await answers.finished;
 * ```
 */
import { canonical, parseJson } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { followJob, payQuestion } from "../actors/client/ask.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { loadKeyFile } from "../ledger/keys.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import type { Supervisor } from "./supervisor.ts";

/** One question of the phase: which provider home answers it, and the prompt. */
export interface DevnetQuestion {
  readonly provider: "provider" | "provider-forger";
  readonly prompt: string;
}

/** The small devnet's questions. */
export const DEVNET_QUESTIONS: readonly DevnetQuestion[] = [
  { provider: "provider", prompt: "What is seven plus five?" },
  { provider: "provider", prompt: "Reverse the word banana." },
  { provider: "provider-forger", prompt: "How many letters are in apple?" },
];

/** One journaled question: its job on the chain. */
export interface InferenceJobRow {
  readonly provider: string;
  readonly prompt: string;
  readonly job_id: string;
}

/** The journaled jobs of the phase, in question order (empty before the phase). */
export async function loadInferenceJobs(dir: string): Promise<InferenceJobRow[]> {
  try {
    return parseJson(await Deno.readTextFile(`${dir}/inference.json`)) as unknown as InferenceJobRow[];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
}

async function saveInferenceJobs(dir: string, rows: readonly InferenceJobRow[]): Promise<void> {
  const tmp = `${dir}/inference.json.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    await file.write(new TextEncoder().encode(canonical(rows as never) + "\n"));
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, `${dir}/inference.json`);
}

/** True when the devnet was built with the inference homes (an older devnet is not). */
export async function hasInferenceHomes(layout: DevnetLayout): Promise<boolean> {
  try {
    await Deno.stat(`${layout.client}/account.key`);
    await Deno.stat(`${layout.provider}/account.key`);
    await Deno.stat(`${layout.providerForger}/account.key`);
    return true;
  } catch {
    return false;
  }
}

/** The phase once every answer is paid for: `finished` settles when every job has ended. */
export interface PaidAnswers {
  /** Resolves once every job ended settled or expired (the providers then stopped); rejects on a failure. */
  readonly finished: Promise<void>;
}

/**
 * Runs the phase to its end (or resumes it); every job ends settled or expired. `asked` replaces
 * `DEVNET_QUESTIONS` (the SmolLM2 devnet asks its one question of the honest provider).
 */
export async function runInferencePhase(...args: Parameters<typeof payAnswers>): Promise<void> {
  await (await payAnswers(...args)).finished;
}

/**
 * Starts the phase (or resumes it) and returns once every question is paid for and its job journaled; the
 * jobs are followed to their end in the background (`finished`), so the caller may go on meanwhile (the
 * devnet trains its next epoch while the answers and their disputes run). Safe to call again after a crash:
 * each question is paid under its fixed idempotency key, so nothing is paid twice.
 */
export async function payAnswers(
  sup: Supervisor,
  layout: DevnetLayout,
  rpc: string,
  forge: boolean,
  say: (line: string) => void,
  asked: readonly DevnetQuestion[] = DEVNET_QUESTIONS,
): Promise<PaidAnswers> {
  const questions = asked.filter((q) => forge || q.provider === "provider");
  const providers = [...new Set(questions.map((q) => q.provider))];
  const stopProviders = async () => {
    for (const name of providers) await sup.stop(name);
  };
  for (const name of providers) {
    const home = name === "provider" ? layout.provider : layout.providerForger;
    const child = await sup.start({
      name,
      task: "provider",
      listens: false,
      args: [
        "--home",
        home,
        "--rpc",
        rpc,
        "--poll-ms",
        "200",
        ...(name === "provider" ? [] : ["--forge", "token"]),
      ],
    });
    child.onLine((line) => {
      if (/^(answer|respond|outcome|error) /.test(line)) {
        say(`[inference] ${name} ${line.replace(/ [0-9a-f]{64} /, " ")}`);
      }
    });
  }
  const chain = new ChainClient(rpc);
  const journal = Journal.open(`${layout.client}/infer.sqlite`);
  const setup = {
    chain,
    key: await loadKeyFile(`${layout.client}/account.key`),
    journal,
    store: new ObjectStore(layout.objects),
    progress: (line: string) => say(`[inference] client ${line}`),
  };
  const paid = [];
  try {
    const rows = await loadInferenceJobs(layout.dir);
    for (const [i, q] of questions.entries()) {
      const provider = layout.accounts[q.provider]!;
      say(`[inference] asking ${q.provider}: ${q.prompt}`);
      const p = await payQuestion(setup, { provider, prompt: q.prompt, request: `devnet-${i}` });
      if (rows.length === i) {
        rows.push({ provider: q.provider, prompt: q.prompt, job_id: p.jobId });
        await saveInferenceJobs(layout.dir, rows);
      }
      paid.push(p);
    }
  } catch (e) {
    journal.close();
    await stopProviders();
    throw e;
  }
  const finished = (async () => {
    try {
      const results = await Promise.all(paid.map((p) => followJob(setup, p)));
      for (const [i, r] of results.entries()) {
        say(
          `[inference] ${questions[i]!.provider} answered ${
            JSON.stringify(r.answer)
          } (${r.tokens.length} tokens, ` +
            `${r.responses} response${r.responses === 1 ? "" : "s"}): paid ${r.paid}, refunded ${r.refunded}`,
        );
      }
    } finally {
      journal.close();
      await stopProviders();
    }
  })();
  // Awaited by the caller; a failure before it awaits must not go unhandled.
  finished.catch(() => {});
  return { finished };
}
