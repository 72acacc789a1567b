/**
 * How a devnet run stops: SIGINT or SIGTERM, or a supervised child that exits unexpectedly, aborts one signal
 * that every phase awaits. The small devnet and the SmolLM2 devnet share it.
 *
 * @example
 * ```ts
 * import { RunAbort } from "./run_abort.ts";
 * // const stop = new RunAbort(sup, say); try { await run(stop.signal); } finally { stop.dispose(); }
 * // if (stop.signalled) Deno.exit(stop.signalled === "SIGINT" ? 130 : 143);
 * ```
 */
import type { Supervisor } from "./supervisor.ts";

/** One run's abort: by a signal (remembered in `signalled`) or by a child's unexpected exit. */
export class RunAbort {
  readonly #abort = new AbortController();
  #signalled: Deno.Signal | null = null;
  readonly #onInt = () => this.#stop("SIGINT");
  readonly #onTerm = () => this.#stop("SIGTERM");

  constructor(sup: Supervisor, say: (line: string) => void) {
    Deno.addSignalListener("SIGINT", this.#onInt);
    Deno.addSignalListener("SIGTERM", this.#onTerm);
    sup.onUnexpectedExit((child, code) => {
      say(`${child.name} exited with ${code}; its last lines:\n${child.tail.slice(-15).join("\n")}`);
      this.#abort.abort(new Error(`${child.name} exited with ${code} (log ${sup.logs}/${child.name}.log)`));
    });
  }

  /** Aborted when the run must stop. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** The signal that stopped the run, or null. */
  get signalled(): Deno.Signal | null {
    return this.#signalled;
  }

  /** Removes the signal listeners (the supervisor's exit hook goes with the supervisor). */
  dispose(): void {
    Deno.removeSignalListener("SIGINT", this.#onInt);
    Deno.removeSignalListener("SIGTERM", this.#onTerm);
  }

  #stop(s: Deno.Signal): void {
    this.#signalled = s;
    this.#abort.abort(new Error(`stopped by ${s}`));
  }
}
