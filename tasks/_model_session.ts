/**
 * What `generate` and `chat` share: loading a stored model and its codec with a progress line, and streaming a
 * greedy reply token by token, each token exactly the kernels' greedy choice (`generate` in
 * `kernels/generation.ts`). By default each pass decodes one token; `--draft N` turns on draft-and-verify
 * (`kernels/draft_verify.ts`: a quantised copy of the model drafts N tokens and the deterministic kernels
 * verify them in one pass), the same tokens. The drafter is onnxruntime's (`kernels/ort_draft.ts`) unless
 * `--drafter int8` asks for the WebAssembly one (`kernels/draft.ts`), which is also the fallback when the
 * native addon cannot load. Measured on SmolLM2 on the 2-core dev machine (December 2026, four prompts of
 * 64 tokens, k = 4): the onnxruntime drafter had 98% of its drafts accepted and ran 1.18-1.22x faster than one
 * token per pass on one thread, but no faster on two (1.01-1.05x in one run, 0.86-0.94x in another, at k = 1-4);
 * since one token per pass reads a quantised import's code panels (`kernels/wasm/code_panels.ts`), drafting
 * is no faster on either (`bench/model_bench.ts`: 31.8 against 31.4 tokens/s on one thread, 44.6 against 45.0
 * on two); the int8 WebAssembly drafter is slower than one token per pass.
 */
import { ObjectStore } from "../core/object_store.ts";
import { makeModelResident } from "../kernels/block.ts";
import { type Drafter, Q8Drafter } from "../kernels/draft.ts";
import { OrtDrafter } from "../kernels/ort_draft.ts";
import { kernelThreads } from "../kernels/threads.ts";
import { type DraftStats, generateDrafted } from "../kernels/draft_verify.ts";
import { loadManifest, readComponent } from "../kernels/manifest.ts";
import type { Model } from "../kernels/model.ts";
import type { Tensors } from "../kernels/safetensors.ts";
import { q8Available } from "../kernels/wasm/draft_wasm.ts";
import { loadCodec, type TextCodec } from "../text/codec.ts";
import { integerOption, UsageError } from "./_cli.ts";

/** A loaded model with its codec and, unless drafting is off, its drafter. */
export interface Session {
  readonly model: Model;
  readonly codec: TextCodec;
  readonly drafter: Drafter | null;
}

/** The help lines of the drafting switches, shared by `generate` and `chat`. */
export const DRAFT_HELP =
  `  --draft N          draft N tokens (1..16) with a quantised copy and verify them in one pass (the same
                     answer; off by default: no faster than one token per pass on the dev machine)
  --drafter NAME     with --draft: onnx (default; onnxruntime, 8-bit) or int8 (WebAssembly, slower)
  --no-draft         decode one token per pass (the default)`;

/** Which drafter drafts: onnxruntime's (`ort_draft.ts`) or the WebAssembly int8 one (`draft.ts`). */
export type DrafterKind = "onnx" | "int8";

/**
 * How many tokens to draft per pass and with which drafter, from the `--draft`/`--drafter`/`--no-draft`
 * values, or null for decoding one token per pass (the default); --draft with --no-draft, --drafter without
 * --draft or an unknown drafter is a usage error.
 */
export function draftChoice(
  draft: string | undefined,
  noDraft: boolean | undefined,
  drafter?: string,
): { k: number; drafter: DrafterKind } | null {
  if (drafter !== undefined && drafter !== "onnx" && drafter !== "int8") {
    throw new UsageError(`--drafter is ${JSON.stringify(drafter)}, expected onnx or int8`);
  }
  if (draft === undefined) {
    if (drafter !== undefined) throw new UsageError("--drafter needs --draft N");
    return null;
  }
  if (noDraft) throw new UsageError("--draft and --no-draft cannot be used together");
  return { k: integerOption(draft, "draft", { min: 1, max: 16 }), drafter: drafter ?? "onnx" };
}

const encoder = new TextEncoder();

/** Writes text to stderr without a newline (progress lines). */
export function progress(text: string): void {
  Deno.stderr.writeSync(encoder.encode(text));
}

/**
 * Loads the model `root` and the codec its manifest names from the object store `objects`, and builds the
 * drafter `draft` names when the model and runtime allow it (the onnxruntime drafter falls back to the int8
 * one, with a line saying why).
 */
export async function loadSession(
  objects: string,
  root: string,
  draft: DrafterKind | null = null,
): Promise<Session> {
  const store = new ObjectStore(objects);
  const { manifest, config } = await loadManifest(store, root);
  const codec = await loadCodec(store, manifest.tokenizer_root);
  const components: Record<string, Tensors> = {};
  const names = Object.keys(manifest.components);
  const live = Deno.stderr.isTerminal();
  for (const [i, name] of names.entries()) {
    if (live) progress(`\rloading model ${root.slice(0, 12)}… ${i + 1}/${names.length} ${name}    `);
    components[name] = readComponent(config, name, await store.get(manifest.components[name]!));
  }
  progress(
    `${live ? "\r" : ""}loaded model ${root.slice(0, 12)}… (${manifest.parameters} parameters)       \n`,
  );
  const model = { config, components };
  // the weights stay put in the kernels' memory (no copy per matmul), each block's groups packed as one B
  makeModelResident(components);
  let drafter: Drafter | null = null;
  if (draft === "onnx") {
    const t0 = performance.now();
    try {
      drafter = await OrtDrafter.create(model, { threads: kernelThreads() });
      const s = ((performance.now() - t0) / 1000).toFixed(1);
      progress(`prepared the onnxruntime drafter (8-bit, draft-and-verify) in ${s} s\n`);
    } catch (e) {
      progress(
        `the onnxruntime drafter cannot run here (${(e as Error).message}); trying the int8 drafter\n`,
      );
    }
  }
  if (draft !== null && drafter === null) {
    if (q8Available() && Q8Drafter.supports(model)) {
      drafter = new Q8Drafter(model);
      progress("prepared the int8 drafter (draft-and-verify)\n");
    } else progress("no drafter can run this model here: decoding one token per pass\n");
  }
  return { model, codec, drafter };
}

/**
 * Greedy reply to `prompt` ids: up to `maxTokens` ids (fewer when the model's positions run out), stopping
 * after the codec's EOS; `onText` receives the decoded text as it becomes complete. Returns the ids (with the
 * EOS when it was generated) and the drafting figures.
 */
export function streamReply(
  session: Session,
  prompt: readonly number[],
  maxTokens: number,
  onText: (text: string) => void,
  draftK?: number,
): { ids: number[]; stats: DraftStats } {
  const { model, codec } = session;
  const eos = codec.manifest.special_ids.eos;
  const text = codec.streamDecoder();
  const room = Math.min(maxTokens, model.config.max_position_embeddings - prompt.length + 1);
  const { tokens, stats } = generateDrafted(model, prompt, room, {
    eos,
    drafter: session.drafter,
    tokensOnly: true, // the reply needs no logits: the exact pruned head chooses each id
    ...(draftK === undefined ? {} : { k: draftK }),
    onToken: (id) => {
      if (id !== eos) onText(text.push(id));
    },
  });
  onText(text.end());
  return { ids: tokens, stats };
}
