/**
 * Actor tasks as real processes for tests: start one, wait for its `listening <url>` line, collect its
 * output, stop it (SIGTERM, or wait for a crash point's SIGKILL).
 */
const ROOT = new URL("../../../", import.meta.url).pathname;

/** A running task process. */
export interface TaskProcess {
  readonly child: Deno.ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** The URL from the `listening` line (empty for tasks that do not listen). */
  url: string;
  /** Resolves when the process exits. */
  readonly status: Promise<Deno.CommandStatus>;
  /** Resolves with the first stdout line matching `re` (rejects if the process exits first). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<Deno.CommandStatus>;
}

/** Starts `deno run -A tasks/<task>.ts ...args` with `env`; waits for `listening` when `listens`. */
export async function startTask(
  task: string,
  args: string[],
  options: { env?: Record<string, string>; listens?: boolean } = {},
): Promise<TaskProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}tasks/${task}.ts`, ...args],
    env: options.env ?? {},
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).spawn();
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  let ended = false;
  const endWaiters: (() => void)[] = [];
  const pump = (async () => {
    const decoder = new TextDecoder();
    let buf = "";
    for await (const chunk of child.stdout) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        for (const w of [...waiters]) {
          if (w.re.test(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      }
    }
    ended = true;
    for (const f of endWaiters) f();
  })();
  const stderr = (async () => new TextDecoder().decode(await new Response(child.stderr).arrayBuffer()))();
  const status = child.status.then(async (s) => {
    await pump;
    return s;
  });
  const p: TaskProcess = {
    child,
    lines,
    url: "",
    status,
    waitFor(re, timeoutMs = 60_000) {
      const found = lines.find((l) => re.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no line matching ${re} after ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({ re, resolve: (l) => (clearTimeout(timer), resolve(l)) });
        const onEnd = async () => {
          clearTimeout(timer);
          reject(
            new Error(`process ended before a line matching ${re}: ${lines.join("\n")}\n${await stderr}`),
          );
        };
        if (ended) onEnd();
        else endWaiters.push(onEnd);
      });
    },
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      return await status;
    },
  };
  if (options.listens !== false) p.url = (await p.waitFor(/^listening /)).slice("listening ".length);
  return p;
}

/** The stderr of a finished process is not kept; this reads the token of a home. */
export function homeToken(home: string): string {
  return Deno.readTextFileSync(`${home}/token`).trim();
}
