/**
 * An actor's home directory (ARCHITECTURE "Actors"): `account.key` (mode 0600, created on first start),
 * `token` (the bearer token of its HTTP server, mode 0600), `journal.sqlite` and `objects/`. Opening a home
 * creates what is missing and refuses a key or token file readable by others.
 *
 * @example
 * ```ts
 * import { openHome } from "./home.ts";
 * const home = await openHome("/tmp/worker-1");
 * home.key.accountId; // the worker's account id
 * home.journal.close();
 * ```
 */
import { ObjectStore } from "../../core/object_store.ts";
import { type AccountKey, createKeyFile, loadKeyFile } from "../../ledger/keys.ts";
import { Journal } from "../runtime/journal.ts";
import { loadToken } from "../runtime/token.ts";

/** The files of a home, by role. */
export interface HomePaths {
  readonly dir: string;
  readonly key: string;
  readonly token: string;
  readonly journal: string;
  readonly objects: string;
}

/** An opened home. */
export interface Home {
  readonly paths: HomePaths;
  readonly key: AccountKey;
  readonly token: string;
  readonly journal: Journal;
  readonly store: ObjectStore;
}

/** The paths of the home at `dir`. */
export function homePaths(dir: string): HomePaths {
  const d = dir.replace(/\/+$/, "") || "/";
  return {
    dir: d,
    key: `${d}/account.key`,
    token: `${d}/token`,
    journal: `${d}/journal.sqlite`,
    objects: `${d}/objects`,
  };
}

/** Opens (creating where missing) the home at `dir`: key, token, journal and object store. */
export async function openHome(dir: string): Promise<Home> {
  const paths = homePaths(dir);
  await Deno.mkdir(paths.dir, { recursive: true });
  let key: AccountKey;
  try {
    await Deno.stat(paths.key);
    key = await loadKeyFile(paths.key);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    key = await createKeyFile(paths.key);
  }
  const token = await loadToken(paths.token);
  const journal = Journal.open(paths.journal);
  return { paths, key, token, journal, store: new ObjectStore(paths.objects) };
}
