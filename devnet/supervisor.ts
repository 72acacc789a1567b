/**
 * The devnet's process supervisor: starts each role as its own `deno run` process with the permissions its
 * `deno.json` task names, appends everything it prints to `<logs>/<name>.log`, knows a process is ready when
 * it prints `listening [on] http://127.0.0.1:<port>`, and stops children with SIGTERM (SIGKILL after a grace).
 * The pid of every child and of the supervisor itself is kept in `<dir>/pids.json`. A watchdog process
 * (`watchdog.ts`) holds a pipe from the supervisor and, when the supervisor dies (even by SIGKILL), ends the
 * children listed there; and a devnet started again ends any child a previous run still left behind (checked
 * by their command line naming the devnet directory, never by name alone) before it starts new ones.
 *
 * @example
 * ```ts
 * import { Supervisor } from "./supervisor.ts";
 * const s = await Supervisor.open(".neuroshard/devnet");
 * const v0 = await s.start({ name: "validator-0", task: "validator", args: ["--home", "..."] });
 * v0.url; // http://127.0.0.1:<port>
 * await s.stopAll();
 * ```
 */
import { ProtocolError } from "../core/errors.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const LISTENING = /listening (?:on )?(http:\/\/127\.0\.0\.1:\d+)/;

/** How to start one child. */
export interface ChildSpec {
  /** Unique name; also the log file name. */
  readonly name: string;
  /** The `deno.json` task whose permissions and file are used (`validator` → `tasks/validator.ts`). */
  readonly task: string;
  readonly args: readonly string[];
  /** Wait for a `listening on` line (default true). */
  readonly listens?: boolean;
  /** The child ends by itself (its exit, whatever the code, is for the caller to handle, not reported). */
  readonly expectsExit?: boolean;
  readonly env?: Record<string, string>;
}

/** A running child. */
export interface Child {
  readonly name: string;
  readonly pid: number;
  /** Its URL once it listens (null for a child that does not listen). */
  readonly url: string | null;
  /** The last lines it printed (at most 200). */
  readonly tail: string[];
  /** Resolves with the exit code. */
  readonly exited: Promise<number>;
  readonly process: Deno.ChildProcess;
  /** Calls `handler` with every line printed so far (from the tail) and every later line. */
  onLine(handler: (line: string) => void): void;
}

/** Flags of a task that `deno.json` does not list (yet). */
const DEFAULT_FLAGS = ["--allow-read", "--allow-write", "--allow-env", "--allow-net=127.0.0.1"];

/** The permission flags and file of a `deno.json` task, read from its `deno run ... tasks/x.ts` command. */
export async function taskCommand(task: string): Promise<{ flags: string[]; file: string }> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    tasks?: Record<string, string>;
  };
  const command = config.tasks?.[task] ?? `deno run ${DEFAULT_FLAGS.join(" ")} tasks/${task}.ts`;
  const words = command?.trim().split(/\s+/) ?? [];
  const file = words.find((w) => /^tasks\/[a-z0-9_]+\.ts$/.test(w));
  if (words[0] !== "deno" || words[1] !== "run" || !file) {
    throw new ProtocolError(
      "invalid_value",
      `Cannot start ${task}: deno.json task is ${
        JSON.stringify(command)
      }, expected deno run <flags> tasks/<file>.ts`,
    );
  }
  return { flags: words.slice(2, words.indexOf(file)), file: `${ROOT}${file}` };
}

/** True when process `pid` runs and its command line contains `marker` (read without Deno's /proc permission). */
export async function alive(pid: number, marker: string): Promise<boolean> {
  // `ps` where there is one (Linux, macOS); `cat /proc/<pid>/cmdline` on a minimal Linux without procps.
  for (
    const [cmd, args] of [["ps", ["-p", String(pid), "-o", "args="]], ["cat", [
      `/proc/${pid}/cmdline`,
    ]]] as const
  ) {
    try {
      const r = await new Deno.Command(cmd, { args: [...args], stdout: "piped", stderr: "null" }).output();
      return r.code === 0 && new TextDecoder().decode(r.stdout).includes(marker);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) return false;
    }
  }
  return false;
}

/** Starts, watches and stops the devnet's children. */
export class Supervisor {
  readonly dir: string;
  readonly logs: string;
  readonly #children = new Map<string, Child>();
  #watchdog: { process: Deno.ChildProcess; writer: WritableStreamDefaultWriter<Uint8Array> } | null = null;
  #exitHandler: (child: Child, code: number) => void = () => {};
  #saving: Promise<void> = Promise.resolve();

  private constructor(dir: string) {
    this.dir = Deno.realPathSync(dir);
    this.logs = `${this.dir}/logs`;
  }

  /**
   * Opens the supervisor of the devnet at `dir` (which must exist): refuses when another live supervisor
   * holds it, and SIGKILLs the children a dead one left behind.
   */
  static async open(dir: string): Promise<Supervisor> {
    const s = new Supervisor(dir);
    await Deno.mkdir(s.logs, { recursive: true });
    let previous: { supervisor?: number; children?: { name: string; pid: number }[] } = {};
    try {
      previous = JSON.parse(await Deno.readTextFile(`${s.dir}/pids.json`));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const owner = previous.supervisor;
    if (owner && owner !== Deno.pid && await alive(owner, "devnet")) {
      throw new ProtocolError(
        "invalid_value",
        `Cannot run the devnet: another devnet (pid ${owner}) is running on ${s.dir}`,
      );
    }
    for (const c of previous.children ?? []) {
      if (await alive(c.pid, s.dir)) {
        Deno.kill(c.pid, "SIGKILL");
        while (await alive(c.pid, s.dir)) await new Promise((r) => setTimeout(r, 20));
      }
    }
    await s.#savePids();
    const watchdog = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-run",
        `${ROOT}devnet/watchdog.ts`,
        String(Deno.pid),
        s.dir,
      ],
      stdin: "piped",
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    s.#watchdog = { process: watchdog, writer: watchdog.stdin.getWriter() };
    return s;
  }

  /** Ends the watchdog (after `stopAll`, it has nothing left to end). */
  async close(): Promise<void> {
    const w = this.#watchdog;
    this.#watchdog = null;
    if (!w) return;
    await w.writer.close().catch(() => {});
    await w.process.status;
  }

  /** Called when a child exits without being asked to stop. */
  onUnexpectedExit(handler: (child: Child, code: number) => void): void {
    this.#exitHandler = handler;
  }

  /** The running child named `name`, if any. */
  get(name: string): Child | undefined {
    return this.#children.get(name);
  }

  /** Names of the running children. */
  names(): string[] {
    return [...this.#children.keys()];
  }

  /**
   * Rewrites `pids.json` with the children running now. Saves run one after another (a child's exit saves in
   * the background while a start may be saving), each through its own temporary file and an atomic rename.
   */
  #savePids(): Promise<void> {
    const save = async () => {
      const children = [...this.#children.values()].map((c) => ({ name: c.name, pid: c.pid }));
      const tmp = `${this.dir}/pids.json.${crypto.randomUUID()}.tmp`;
      await Deno.writeTextFile(tmp, JSON.stringify({ supervisor: Deno.pid, children }) + "\n");
      await Deno.rename(tmp, `${this.dir}/pids.json`);
    };
    const next = this.#saving.then(save, save);
    this.#saving = next.catch(() => {});
    return next;
  }

  /** Starts a child and, unless `listens` is false, waits (up to `timeoutMs`) until it listens. */
  async start(spec: ChildSpec, timeoutMs = 120_000): Promise<Child> {
    if (this.#children.has(spec.name)) {
      throw new ProtocolError("invalid_value", `Cannot start ${spec.name}: it is already running`);
    }
    const { flags, file } = await taskCommand(spec.task);
    const log = await Deno.open(`${this.logs}/${spec.name}.log`, { append: true, create: true });
    const process = new Deno.Command(Deno.execPath(), {
      args: ["run", ...flags, file, ...spec.args],
      cwd: ROOT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1", ...(spec.env ?? {}) },
    }).spawn();
    const tail: string[] = [];
    const listeners: ((line: string) => void)[] = [];
    let ready: (url: string) => void = () => {};
    const listening = new Promise<string>((r) => (ready = r));
    const encoder = new TextEncoder();
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      let buf = "";
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        buf += chunk;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          await log.write(encoder.encode(line + "\n"));
          tail.push(line);
          if (tail.length > 200) tail.shift();
          for (const l of listeners) l(line);
          const m = LISTENING.exec(line);
          if (m) ready(m[1]!);
        }
      }
      if (buf) await log.write(encoder.encode(buf + "\n"));
    };
    const pumps = Promise.all([pump(process.stdout), pump(process.stderr)]);
    const exited = process.status.then(async (s) => {
      await pumps.catch(() => {});
      log.close();
      return s.code;
    });
    const child: Child = {
      name: spec.name,
      pid: process.pid,
      url: null,
      tail,
      exited,
      process,
      onLine(handler) {
        for (const line of tail) handler(line);
        listeners.push(handler);
      },
    };
    this.#children.set(spec.name, child);
    await this.#savePids();
    void exited.then((code) => {
      // The entry is replaced by a copy with its URL once the child listens: compare the process, not the entry.
      const current = this.#children.get(spec.name);
      if (current?.process === process) {
        this.#children.delete(spec.name);
        void this.#savePids().catch(() => {});
        if (!spec.expectsExit) this.#exitHandler(current, code);
      }
    });
    if (spec.listens === false) return child;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const url = await Promise.race([
      listening,
      exited.then((code): never => {
        throw new ProtocolError(
          "invalid_value",
          `Cannot start ${spec.name}: it exited with ${code} before listening:\n${
            tail.slice(-20).join("\n")
          }`,
        );
      }),
      new Promise<never>((_, fail) => {
        timer = setTimeout(
          () => fail(new Error(`Cannot start ${spec.name}: not listening after ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    const started = { ...child, url };
    if (this.#children.get(spec.name) === child) this.#children.set(spec.name, started);
    return started;
  }

  /** Stops one child: SIGTERM, then SIGKILL after `graceMs`; waits for it to exit. */
  async stop(name: string, graceMs = 5_000): Promise<void> {
    const child = this.#children.get(name);
    if (!child) return;
    this.#children.delete(name);
    await terminate(child.process, child.exited, graceMs);
    await this.#savePids();
  }

  /** Stops every child, the last started first. */
  async stopAll(graceMs = 5_000): Promise<void> {
    for (const name of this.names().reverse()) await this.stop(name, graceMs);
  }
}

/** Ends a process: SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
export async function terminate(
  process: Deno.ChildProcess,
  exited: Promise<unknown>,
  graceMs = 5_000,
): Promise<void> {
  const signal = (sig: Deno.Signal) => {
    try {
      process.kill(sig);
    } catch {
      // already exited
    }
  };
  signal("SIGTERM");
  const timer = setTimeout(() => signal("SIGKILL"), graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
