/**
 * Files that hold secrets (account seeds, consensus seeds, bearer tokens): created with mode 0600, fsynced,
 * never overwritten; read only when no group or other permission bit is set. Error messages name the file
 * and what is wrong with it, never its content.
 *
 * @example
 * ```ts
 * import { readSecretFile, writeSecretFile } from "./secret_file.ts";
 * await writeSecretFile("/tmp/home/account.key", "ab".repeat(32), "key file");
 * const seed = await readSecretFile("/tmp/home/account.key", "key file");
 * ```
 */
import { ProtocolError } from "./errors.ts";

/**
 * Writes `text` and a newline to a new file of mode 0600 (creating parent directories), fsynced.
 * `key_exists` when the file is already there: a secret is never overwritten.
 */
export async function writeSecretFile(path: string, text: string, what: string): Promise<void> {
  const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  if (parent) await Deno.mkdir(parent, { recursive: true });
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) {
      throw new ProtocolError("key_exists", `Cannot create ${what} ${path}: it already exists`);
    }
    throw e;
  }
  try {
    const bytes = new TextEncoder().encode(text + "\n");
    let written = 0;
    while (written < bytes.length) written += await file.write(bytes.subarray(written));
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.chmod(path, 0o600); // the mode given at creation is filtered by the umask; state it explicitly
}

/**
 * Reads a secret file written by `writeSecretFile`, without its final newline. `invalid_key` when it does not
 * exist or is readable by group or others.
 */
export async function readSecretFile(path: string, what: string): Promise<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ProtocolError("invalid_key", `Cannot read ${what} ${path}: it does not exist`);
    }
    throw e;
  }
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    const mode = (info.mode & 0o777).toString(8);
    throw new ProtocolError("invalid_key", `Cannot use ${what} ${path}: mode is 0${mode}, expected 0600`);
  }
  const text = await Deno.readTextFile(path);
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
