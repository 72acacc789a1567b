/**
 * Paid-inference flows on the in-process training ledger: a genesis codec whose EOS id is 30 (the devnet model
 * at seed 1 answers [10, 20, 30] with 30 at once, and [1, 2, 3, 4] with 4082 forever), a requester, a provider
 * and a referee, and helpers to request, answer (honestly or forged), challenge, upload and seal.
 */
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { PRESETS } from "../../../kernels/config.ts";
import { generate } from "../../../kernels/generation.ts";
import { type GenerationProof, generationRecord } from "../../../kernels/generation_record.ts";
import { initModel } from "../../../kernels/model.ts";
import type { AppOptions } from "../../../ledger/app.ts";
import type { Envelope } from "../../../ledger/envelope.ts";
import type { AccountKey } from "../../../ledger/keys.ts";
import { responseMetadata } from "../../../ledger/inference/wire.ts";
import { fixtureCodec } from "../../text/_fixture.ts";
import { TWO_STAGES, uploadAndSeal } from "../training/_flow.ts";
import { challenger, devnetModel, Net, sponsor, stranger, workers } from "../training/_harness.ts";

/** The EOS id of the test codec. */
export const EOS = 30;
/** Who asks, who answers, who referees. */
export const requester: AccountKey = sponsor;
export const provider: AccountKey = workers[0]!;
export const referee: AccountKey = challenger;
export { stranger };

const model = initModel(PRESETS.devnet, 1);
const modelRoot = devnetModel().root;

/** A codec genesis field with EOS id `EOS`. */
export function testCodec(): JsonValue {
  const built = fixtureCodec();
  const manifest = { ...built.manifest, special_ids: { ...built.manifest.special_ids, eos: EOS } };
  return { root: built.root, manifest: manifest as unknown as JsonObject };
}

/** A training ledger with the test codec. */
export function inferenceNet(params: JsonObject = {}, path?: string, app?: AppOptions): Net {
  return new Net({
    codec: testCodec(),
    params,
    ...(path === undefined ? {} : { path }),
    ...(app === undefined ? {} : { app }),
  });
}

/** An `infer` from `key` (default the requester) for the serving root, with `fields` overriding. */
export function inferTx(
  net: Net,
  fields: JsonObject = {},
  key: AccountKey = requester,
  offset = 0,
): Envelope {
  return net.tx(key, "infer", {
    model_root: net.lifecycle().serving_root as string,
    provider: provider.accountId,
    prompt_ids: [1, 2, 3, 4],
    max_tokens: 4,
    max_price: 1_000,
    expires_in: 40,
    ...fields,
  }, offset);
}

/** The job as `/inference?id=` answers it. */
export function job(net: Net, jobId: string): JsonObject {
  return net.app.query(`/inference?id=${jobId}`) as JsonObject;
}

/** The state of a job. */
export function jobState(net: Net, jobId: string): JsonObject {
  return job(net, jobId).state as JsonObject;
}

/** The greedy answer of the devnet model, or `tokens` as given (a forgery), as a generation proof. */
export function prove(prompt: number[], maxTokens: number, tokens?: number[]): GenerationProof {
  const toks = tokens ?? generate(model, prompt, maxTokens, EOS).tokens;
  return generationRecord(model, modelRoot, prompt, toks, { max_tokens: maxTokens, eos_id: EOS }, TWO_STAGES);
}

/** The honest greedy tokens of the devnet model after `prompt` with a forged first token `first`. */
export function forgedTokens(prompt: number[], maxTokens: number, first: number): number[] {
  return [first, ...generate(model, [...prompt, first], maxTokens - 1, EOS).tokens].slice(0, maxTokens);
}

/** A `respond` by `key` (default the provider) for `jobId` with `proof`; its objects join the net's. */
export function respondTx(
  net: Net,
  jobId: string,
  proof: GenerationProof,
  key: AccountKey = provider,
): Envelope {
  for (const [r, b] of proof.objects) net.objects.set(r, b);
  return net.tx(key, "respond", {
    job_id: jobId,
    record_root: proof.recordRoot,
    metadata: responseMetadata(proof),
  });
}

/** The referee challenges `stage` of the pending response and uploads and seals what it needs. */
export function refute(net: Net, jobId: string, claimId: string, stage: number): string[] {
  net.ok(
    net.tx(referee, "challenge", {
      claim_id: claimId,
      stage,
      challenge_kind: "fraud",
      object_root: null,
      block: null,
      phase: null,
    }),
  );
  const challenge = (jobState(net, jobId).claim as JsonObject).challenge as JsonObject;
  const needed = challenge.needed as string[];
  for (const root of needed) uploadAndSeal(net, claimId, root, referee);
  return needed;
}
