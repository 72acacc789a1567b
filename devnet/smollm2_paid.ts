/**
 * The SmolLM2 scenario's `paid` phase: the capital-of-France question bought through paid inference (PROTOCOL
 * §8) from a Provider serving the chain's serving model, paid per token and settled after the response's
 * challenge window with the referee checking it. It runs after the evaluation, so the serving model is the
 * grown, trained model when the gate promoted it (the genesis SmolLM2 when it kept the serving root); the
 * final model's own answer by `generate` is the `answer` phase's.
 *
 * It reuses the small devnet's inference phase (`inference_phase.ts`): the job's id is journaled in
 * `<devnet>/inference.json` under a fixed idempotency key before the phase waits on it, so a run killed here
 * resumes the same job and pays nothing twice, and the report reads the job back from the chain.
 *
 * @example
 * ```ts
 * import { buySmollm2Answer } from "./smollm2_paid.ts";
 * // await buySmollm2Answer(sup, layout, rpc, say);
 * ```
 */
import { ChainClient } from "../actors/common/chain.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import { runInferencePhase } from "./inference_phase.ts";
import { provideServingModel } from "./serve_model.ts";
import type { Supervisor } from "./supervisor.ts";

/** The question bought through paid inference (the one `generate` answers with the final model). */
export const SMOLLM2_PAID_PROMPT = "What is the capital of France?";

/**
 * Gives the provider and the referee the serving model's objects (from the build while it is the genesis
 * model, else from the workers' homes and the devnet's `objects/`, where the `answer` phase gathered the final
 * model), waits until nothing is reserved or claimed and two blocks have passed, then buys the
 * answer from the honest provider and follows it to its settlement; the serving root it bought from.
 */
export async function buySmollm2Answer(
  sup: Supervisor,
  layout: DevnetLayout,
  rpc: string,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<string> {
  const chain = new ChainClient(rpc);
  for (;;) {
    if (signal.aborted) throw new Error("Cannot buy the answer: interrupted");
    const lc = await chain.lifecycle();
    if (lc.assignment === null && lc.claim === null) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const serving = (await chain.lifecycle()).serving_root!;
  const holders = [layout.dir, ...layout.workers, layout.forger];
  for (const home of [layout.referee, layout.provider]) {
    await provideServingModel(chain, serving, home, holders);
  }
  say(`[paid] the provider serves ${serving.slice(0, 12)}; asking: ${SMOLLM2_PAID_PROMPT}`);
  await runInferencePhase(sup, layout, rpc, false, (line) => say(line.replace("[inference]", "[paid]")), [
    { provider: "provider", prompt: SMOLLM2_PAID_PROMPT },
  ]);
  return serving;
}
