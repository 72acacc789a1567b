/**
 * Model manifests (PROTOCOL §10.2): `{format: "neuroshard-model-v1", config, components, parameters, parent,
 * origin, tokenizer_root, growth?}` where `components` maps every component name (embed, norm, block_000,
 * …) to the root of its canonical safetensors file. A model's root is `id(manifest)`; the manifest's
 * canonical bytes are stored in the object store under that root.
 *
 * @example
 * ```ts
 * import { loadModel, storeModel } from "./manifest.ts";
 * import { initModel } from "./model.ts";
 * import { PRESETS } from "./config.ts";
 * import { ObjectStore } from "../core/object_store.ts";
 * const store = new ObjectStore(await Deno.makeTempDir());
 * const { root } = await storeModel(store, initModel(PRESETS.devnet, 1), { origin: { kind: "init", seed: 1 }, tokenizer_root: "0".repeat(64) });
 * const model = await loadModel(store, root);
 * ```
 */
import {
  canonicalBytes,
  decodeCanonical,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { isRoot } from "../core/hex.ts";
import type { ObjectStore } from "../core/object_store.ts";
import { configFromJson, configToJson, type ModelConfig } from "./config.ts";
import { componentNames, componentSpec, type Model, modelParameters } from "./model.ts";
import { readSafetensors, type Tensors, writeSafetensors } from "./safetensors.ts";

/** The manifest format tag. */
export const MODEL_FORMAT = "neuroshard-model-v1";

/** A model manifest as committed. */
export interface Manifest {
  readonly format: typeof MODEL_FORMAT;
  readonly config: JsonObject;
  readonly components: Record<string, string>;
  readonly parameters: number;
  readonly parent: string | null;
  readonly origin: JsonValue;
  readonly tokenizer_root: string;
  readonly growth?: JsonObject;
}

/** What a manifest says besides the config and the components. */
export interface ManifestInfo {
  readonly parent?: string | null;
  readonly origin: JsonValue;
  readonly tokenizer_root: string;
  readonly growth?: JsonObject;
}

function bad(message: string): ProtocolError {
  return new ProtocolError("invalid_model", `Cannot use model manifest: ${message}`);
}

/** Builds a manifest from component roots (every component of the config, in canonical order). */
export function buildManifest(
  config: ModelConfig,
  roots: Record<string, string>,
  info: ManifestInfo,
): Manifest {
  const components: Record<string, string> = {};
  for (const name of componentNames(config)) {
    if (!isRoot(roots[name])) throw bad(`component ${name} has root ${JSON.stringify(roots[name])}`);
    components[name] = roots[name]!;
  }
  const manifest: Manifest = {
    format: MODEL_FORMAT,
    config: configToJson(config),
    components,
    parameters: modelParameters(config),
    parent: info.parent ?? null,
    origin: info.origin,
    tokenizer_root: info.tokenizer_root,
    ...(info.growth ? { growth: info.growth } : {}),
  };
  return parseManifest(manifest as unknown as JsonValue).manifest;
}

/** Validates a manifest value; `invalid_model` when anything is missing, extra or inconsistent. */
export function parseManifest(value: JsonValue): { manifest: Manifest; config: ModelConfig } {
  if (!isObject(value)) throw bad("not an object");
  const keys = Object.keys(value).sort().join(",");
  const base = "components,config,format,origin,parameters,parent,tokenizer_root";
  if (keys !== base && keys !== "components,config,format,growth,origin,parameters,parent,tokenizer_root") {
    throw bad(`fields are ${keys}`);
  }
  if (value.format !== MODEL_FORMAT) throw bad(`format is ${JSON.stringify(value.format)}`);
  const config = configFromJson(value.config ?? null);
  const comps = value.components;
  if (!isObject(comps)) throw bad("components is not an object");
  const names = componentNames(config);
  if (Object.keys(comps).length !== names.length) {
    throw bad(`has ${Object.keys(comps).length} components, expected ${names.length}`);
  }
  for (const name of names) if (!isRoot(comps[name])) throw bad(`component ${name} has no root`);
  if (value.parameters !== modelParameters(config)) {
    throw bad(`parameters is ${value.parameters}, expected ${modelParameters(config)}`);
  }
  if (value.parent !== null && !isRoot(value.parent)) throw bad(`parent is ${JSON.stringify(value.parent)}`);
  if (!isRoot(value.tokenizer_root)) throw bad(`tokenizer_root is ${JSON.stringify(value.tokenizer_root)}`);
  if (value.growth !== undefined && !isObject(value.growth)) throw bad("growth is not an object");
  canonicalBytes(value); // throws invalid_value for anything canonical JSON cannot carry
  return { manifest: value as unknown as Manifest, config };
}

/** The root of a manifest: `id(manifest)`. */
export function manifestRoot(manifest: Manifest): string {
  return id(manifest as unknown as JsonValue);
}

/** The canonical safetensors bytes of every component, by name. */
export function componentFiles(model: Model): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const name of componentNames(model.config)) out[name] = writeSafetensors(model.components[name]!);
  return out;
}

/** Stores every component and the manifest; returns the manifest and its root. */
export async function storeModel(
  store: ObjectStore,
  model: Model,
  info: ManifestInfo,
): Promise<{ manifest: Manifest; root: string }> {
  const roots: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(componentFiles(model))) roots[name] = await store.put(bytes);
  const manifest = buildManifest(model.config, roots, info);
  const root = await store.put(canonicalBytes(manifest));
  return { manifest, root };
}

/**
 * The manifest of `model` without storing it: each component's root is the SHA-256 of its canonical file,
 * built one component at a time (so at most one file is held). A training step checks the parent's roots
 * against the files it commits chunk trees for, so a manifest of made-up roots is refused.
 */
export function manifestOf(model: Model, info: ManifestInfo): Manifest {
  const roots: Record<string, string> = {};
  for (const name of componentNames(model.config)) {
    roots[name] = sha256Hex(writeSafetensors(model.components[name]!));
  }
  return buildManifest(model.config, roots, info);
}

/**
 * Reads a component's bytes against the config's spec; `{ view: true }` makes the tensors views of `bytes`
 * where possible (see `readSafetensors`), so the caller must not write to the bytes afterwards.
 */
export function readComponent(
  config: ModelConfig,
  name: string,
  bytes: Uint8Array,
  options: { readonly view?: boolean } = {},
): Tensors {
  return readSafetensors(bytes, componentSpec(config, name), options);
}

/** Loads a manifest (strict canonical JSON) from the store. */
export async function loadManifest(
  store: ObjectStore,
  root: string,
): Promise<{ manifest: Manifest; config: ModelConfig }> {
  return parseManifest(decodeCanonical(await store.get(root)));
}

/** Loads a whole model from the store by manifest root. */
export async function loadModel(store: ObjectStore, root: string): Promise<Model & { manifest: Manifest }> {
  const { manifest, config } = await loadManifest(store, root);
  const components: Record<string, Tensors> = {};
  for (const [name, r] of Object.entries(manifest.components)) {
    components[name] = readComponent(config, name, await store.get(r));
  }
  return { config, components, manifest };
}
