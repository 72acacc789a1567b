/**
 * Puts the serving model into a provider's object store before the devnet's paid-inference phase: after a
 * promotion the serving root is a model the training pipeline computed, whose components only the workers
 * (and whoever fetched them) hold. The manifest comes from the chain (`/manifest?root=`, which checks it is
 * the one the claims committed) and each component from the first devnet home whose store has it; every
 * object is stored under its expected root (`putExpected` refuses bytes that do not hash to it), so a
 * provider never serves bytes other than the ones the chain names.
 *
 * @example
 * ```ts
 * import { provideServingModel } from "./serve_model.ts";
 * // await provideServingModel(chain, servingRoot, layout.provider, [...layout.workers, layout.forger]);
 * ```
 */
import { canonicalBytes, type JsonValue } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { ObjectStore } from "../core/object_store.ts";
import type { ChainClient } from "../actors/common/chain.ts";

/** Copies model `root` (manifest and components) into `home`'s store from `sources` (homes); objects copied. */
export async function provideServingModel(
  chain: ChainClient,
  root: string,
  home: string,
  sources: readonly string[],
): Promise<number> {
  const to = new ObjectStore(`${home}/objects`);
  const from = sources.map((h) => new ObjectStore(`${h}/objects`));
  let copied = 0;
  if (!(await to.has(root))) {
    await to.putExpected(root, canonicalBytes((await chain.manifest(root)) as unknown as JsonValue));
    copied++;
  }
  const manifest = await chain.manifest(root);
  for (const [name, component] of Object.entries(manifest.components)) {
    if (await to.has(component)) continue;
    const holder = await firstHolder(from, component);
    if (holder === null) {
      throw new ProtocolError(
        "object_not_found",
        `Cannot serve model ${root}: component ${name} (${component}) is in none of ${sources.length} homes`,
      );
    }
    await to.putExpected(component, await holder.get(component));
    copied++;
  }
  return copied;
}

async function firstHolder(stores: readonly ObjectStore[], root: string): Promise<ObjectStore | null> {
  for (const s of stores) if (await s.has(root)) return s;
  return null;
}
