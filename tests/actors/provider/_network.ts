/**
 * A small paid-inference network for actor tests, all real processes on 127.0.0.1: one validator over a
 * genesis with a small model (vocabulary 300) whose manifest pins the text-test codec (EOS id 2), and homes
 * for a provider, a forging provider, a referee and a client, all funded in genesis and holding the model and
 * codec objects. Everything is removed by `close`.
 */
import { canonical, type JsonObject, type JsonValue, parseJson } from "../../../core/canonical.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import { ObjectStore } from "../../../core/object_store.ts";
import { openHome } from "../../../actors/common/home.ts";
import { ChainClient } from "../../../actors/common/chain.ts";
import type { ModelConfig } from "../../../kernels/config.ts";
import { storeModel } from "../../../kernels/manifest.ts";
import { initModel, type Model } from "../../../kernels/model.ts";
import { writeDevnetGenesis } from "../../../genesis/ledger_devnet.ts";
import { storeCodec } from "../../../text/codec.ts";
import { ATOMS_PER_NEURO } from "../../../workflows/params.ts";
import { startProc, stopProc } from "../../e2e/_ledger_procs.ts";
import { fixtureCodec } from "../../text/_fixture.ts";

/** The served model's shape: the codec's 300 ids, two blocks, 128 positions (prompts of ~104 ids + 8). */
export const SERVED: ModelConfig = {
  vocab_size: 300,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 128,
};

/** A running inference network. */
export interface InferenceNetwork {
  readonly dir: string;
  readonly rpc: string;
  readonly chain: ChainClient;
  readonly model: Model;
  readonly modelRoot: string;
  /** The object store holding the model and codec, for the client (`--objects`). */
  readonly objects: string;
  readonly homes: { provider: string; forger: string; referee: string; client: string };
  readonly accounts: { provider: string; forger: string; referee: string; client: string };
  close(): Promise<void>;
}

/** Starts the network. */
export async function startInferenceNetwork(
  options: { challengeBlocks?: number } = {},
): Promise<InferenceNetwork> {
  const dir = Deno.makeTempDirSync({ prefix: "inference-net-" });
  const names = ["provider", "forger", "referee", "client"] as const;
  const homes = Object.fromEntries(names.map((n) => [n, `${dir}/${n}`])) as InferenceNetwork["homes"];
  const accounts = {} as Record<string, string>;
  for (const n of names) {
    const home = await openHome(homes[n]);
    accounts[n] = home.key.accountId;
    home.journal.close();
  }
  const codec = fixtureCodec();
  const model = initModel(SERVED, 7);
  let stored: { manifest: unknown; root: string } | null = null;
  const objects = `${dir}/objects`;
  for (const d of [objects, ...names.map((n) => `${homes[n]}/objects`)]) {
    const store = new ObjectStore(d);
    await storeCodec(store, codec);
    stored = await storeModel(store, model, {
      origin: { kind: "init", seed: 7 },
      tokenizer_root: codec.root,
    });
  }
  const { genesisPath, homes: validatorHomes } = await writeDevnetGenesis({
    out: `${dir}/net`,
    chainId: "neuroshard-inference-test",
    validators: 1,
    blockIntervalMs: 150,
    model: { manifest: stored!.manifest as JsonValue, root: stored!.root },
    codec: { root: codec.root, manifest: codec.manifest as unknown as JsonObject },
    training: {
      learning_rate: toHexFloat(0.05),
      clip: toHexFloat(1),
      batches: [{ input_ids: [[5, 6, 7, 8]], labels: [[6, 7, 8, -100]] }],
    },
    accounts: [
      { id: accounts.provider!, balance: 100 * ATOMS_PER_NEURO },
      { id: accounts.forger!, balance: 100 * ATOMS_PER_NEURO },
      { id: accounts.referee!, balance: 50 * ATOMS_PER_NEURO },
      { id: accounts.client!, balance: 1 * ATOMS_PER_NEURO },
    ],
  });
  const genesis = parseJson(await Deno.readTextFile(genesisPath)) as { params: Record<string, number> };
  // A wider challenge window than the devnet's 6 blocks, so a referee on a loaded machine still makes it.
  genesis.params.challenge_blocks = options.challengeBlocks ?? 12;
  // A challenge's uploads get as many blocks as the window.
  genesis.params.availability_blocks = Math.max(
    genesis.params.availability_blocks!,
    genesis.params.challenge_blocks,
  );
  genesis.params.min_inference_blocks = genesis.params.challenge_blocks + 1;
  genesis.params.max_inference_blocks = 400;
  await Deno.writeTextFile(genesisPath, canonical(genesis as unknown as JsonValue) + "\n");
  const validator = await startProc(validatorHomes[0]!, genesisPath);
  return {
    dir,
    rpc: validator.url,
    chain: new ChainClient(validator.url),
    model,
    modelRoot: stored!.root,
    objects,
    homes,
    accounts: accounts as InferenceNetwork["accounts"],
    async close() {
      await stopProc(validator);
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

/** Runs `deno task infer` (the real task file) as a process; its exit code, stdout and stderr. */
export async function runInfer(
  net: InferenceNetwork,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const root = new URL("../../../", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      `${root}tasks/infer.ts`,
      "--key",
      `${net.homes.client}/account.key`,
      "--rpc",
      net.rpc,
      "--objects",
      net.objects,
      ...args,
    ],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}
