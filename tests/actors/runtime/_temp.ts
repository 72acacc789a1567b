/** Temporary directories for tests, removed when the test process exits. */
const made: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const dir of made) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  }
});

/** A fresh temporary directory, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = Deno.makeTempDirSync({ prefix });
  made.push(dir);
  return dir;
}
