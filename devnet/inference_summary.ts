/**
 * The paid answers of the devnet's inference phase as the summary shows them, read back from the chain for
 * each job the phase journaled (`inference.json`): the prompt, the answer text (decoded with the chain's
 * codec), its tokens, the atoms paid and refunded, the outcome, and every response refuted before the one
 * that settled with why: the challenge that refuted it, found among the committed transactions.
 *
 * @example
 * ```ts
 * import { collectInference } from "./inference_summary.ts";
 * // const answers = await collectInference(layout, rpc, new ChainView(rpc));
 * ```
 */
import { type JsonObject, parseJson } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { loadCodec } from "../text/codec.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import type { ChainView } from "./chain_view.ts";
import { loadInferenceJobs } from "./inference_phase.ts";

/** A refuted response and why. */
export interface RefutedResponse extends JsonObject {
  claim_id: string;
  reason: string;
}

/** One paid answer as the chain settled it. */
export interface InferenceOutcome extends JsonObject {
  provider: string;
  prompt: string;
  job_id: string;
  /** `settled` or `expired`. */
  outcome: string;
  answer: string;
  tokens: number[];
  paid_atoms: number;
  refunded_atoms: number;
  /** Responses refuted before the one that settled, oldest first. */
  refuted: RefutedResponse[];
}

/** Reads the journaled jobs of the inference phase back from the chain, decoding each answer. */
export async function collectInference(
  layout: DevnetLayout,
  rpc: string,
  view: ChainView,
  height: number,
): Promise<InferenceOutcome[]> {
  const rows = await loadInferenceJobs(layout.dir);
  if (rows.length === 0) return [];
  const chain = new ChainClient(rpc);
  const genesis = parseJson(await Deno.readTextFile(layout.genesisPath)) as { codec: { root: string } };
  const codec = await loadCodec(new ObjectStore(layout.objects), genesis.codec.root);
  const challenges = (await view.transactions(height)).filter((t) => t.kind === "challenge" && t.ok);
  const out: InferenceOutcome[] = [];
  for (const row of rows) {
    const j = await chain.inference(row.job_id);
    const s = (j?.state ?? {}) as {
      status?: string;
      job?: { max_price: number; price_per_token: number };
      response?: { record_root: string; tokens: number };
    };
    const settled = s.status === "settled";
    const record = settled
      ? (j!.metadata ?? {})[s.response!.record_root] as { tokens: number[]; stop: string }
      : null;
    const tokens = record?.tokens ?? [];
    const paid = record ? s.response!.tokens * s.job!.price_per_token : 0;
    const claims = j?.claims ?? [];
    const refuted = (settled ? claims.slice(0, -1) : claims).map((claim_id) => {
      const c = challenges.find((t) => t.body.claim_id === claim_id);
      return {
        claim_id,
        reason: c
          ? `refuted: ${String(c.body.challenge_kind)} challenge at stage ${c.body.stage}`
          : "expired",
      };
    });
    out.push({
      provider: row.provider,
      prompt: row.prompt,
      job_id: row.job_id,
      outcome: s.status ?? "unknown",
      answer: codec.decode(record?.stop === "eos" ? tokens.slice(0, -1) : tokens),
      tokens,
      paid_atoms: paid,
      refunded_atoms: (s.job?.max_price ?? 0) - paid,
      refuted,
    });
  }
  return out;
}
