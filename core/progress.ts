/**
 * Progress of long work (a download, a large file read, a corpus): one line that rewrites itself on
 * a terminal (`reading model.gguf  45.2 MiB / 134.0 MiB  34%  12.3 MiB/s  ETA 7s`), plain lines at most every
 * `plainEveryMs` when stderr is not a terminal, and JSON lines (`{"event":"progress",…}`) with `--json`.
 * Everything goes to stderr, so a task's result on stdout stays clean.
 *
 * @example
 * ```ts
 * import { Progress } from "./progress.ts";
 * const p = new Progress("reading model.gguf", 134_000_000, { unit: "bytes" });
 * p.update(45_000_000);
 * p.finish();
 * ```
 */

/** How progress is written. */
export interface ProgressOptions {
  readonly unit?: "bytes" | "items";
  /** JSON lines instead of text. */
  readonly json?: boolean;
  /** Whether stderr is a terminal (default: asked of Deno.stderr). */
  readonly tty?: boolean;
  readonly write?: (text: string) => void;
  readonly now?: () => number;
  /** Least time between plain lines (default 2 s); a terminal line is redrawn at most every 100 ms. */
  readonly plainEveryMs?: number;
}

const UNITS = ["B", "KiB", "MiB", "GiB"];

/** `134.0 MiB` for bytes, `1,234` for items. */
export function amount(n: number, unit: "bytes" | "items"): string {
  if (unit === "items") return Math.round(n).toLocaleString("en-US");
  let i = 0;
  while (n >= 1024 && i < UNITS.length - 1) (n /= 1024, i++);
  return `${i === 0 ? n.toFixed(0) : n.toFixed(1)} ${UNITS[i]}`;
}

/** `7s`, `2m05s`, `1h02m`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** The numbers of one progress report: rate per second and the seconds left (null when unknown). */
export function measure(done: number, total: number | null, elapsedMs: number): {
  rate: number;
  eta: number | null;
  fraction: number | null;
} {
  const rate = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
  const fraction = total && total > 0 ? Math.min(1, done / total) : null;
  const eta = total !== null && rate > 0 ? Math.max(0, (total - done) / rate) : null;
  return { rate, eta, fraction };
}

/**
 * One progress line: label, amount done (of total), percent, rate and ETA. Before `rateAfterMs` of elapsed
 * time (default 0) the rate and ETA are left out: measured over the first few events of bursty work (a
 * block's worth of uploads) they mean nothing.
 */
export function progressText(
  label: string,
  done: number,
  total: number | null,
  elapsedMs: number,
  unit: "bytes" | "items",
  rateAfterMs = 0,
): string {
  const m = measure(done, total, elapsedMs);
  const of = total === null ? amount(done, unit) : `${amount(done, unit)} / ${amount(total, unit)}`;
  const pct = m.fraction === null ? "" : `  ${Math.floor(m.fraction * 100)}%`;
  if (elapsedMs < rateAfterMs) return `${label}  ${of}${pct}`;
  const rate = `  ${amount(m.rate, unit)}/s`;
  const eta = m.eta === null ? "" : `  ETA ${duration(m.eta)}`;
  return `${label}  ${of}${pct}${rate}${eta}`;
}

/** A progress reporter for one piece of work. */
export class Progress {
  readonly #label: string;
  readonly #total: number | null;
  readonly #o: Required<Omit<ProgressOptions, "tty">> & { tty: boolean };
  readonly #start: number;
  #last: number;
  #done = 0;

  constructor(label: string, total: number | null, options: ProgressOptions = {}) {
    this.#label = label;
    this.#total = total;
    const encoder = new TextEncoder();
    this.#o = {
      unit: options.unit ?? "items",
      json: options.json ?? false,
      tty: options.tty ?? Deno.stderr.isTerminal(),
      write: options.write ?? ((t) => void Deno.stderr.writeSync(encoder.encode(t))),
      now: options.now ?? (() => performance.now()),
      plainEveryMs: options.plainEveryMs ?? 2_000,
    };
    this.#start = this.#o.now();
    this.#last = this.#start; // the first line waits one interval, so its rate means something
  }

  /** Reports that `done` units are finished (written only when due). */
  update(done: number): void {
    this.#done = done;
    const now = this.#o.now();
    const every = this.#o.json || !this.#o.tty ? this.#o.plainEveryMs : 100;
    if (now - this.#last < every) return;
    this.#last = now;
    this.#emit(now, false);
  }

  /** Reports the end (always written; ends the terminal line). */
  finish(): void {
    this.#emit(this.#o.now(), true);
  }

  #emit(now: number, last: boolean): void {
    const elapsed = now - this.#start;
    if (this.#o.json) {
      const m = measure(this.#done, this.#total, elapsed);
      this.#o.write(
        JSON.stringify({
          event: "progress",
          label: this.#label,
          done: this.#done,
          total: this.#total,
          unit: this.#o.unit,
          rate: Math.round(m.rate),
          eta_s: m.eta === null ? null : Math.round(m.eta),
          finished: last,
        }) + "\n",
      );
      return;
    }
    const text = progressText(this.#label, this.#done, this.#total, elapsed, this.#o.unit);
    if (this.#o.tty) this.#o.write(`\r\x1b[2K${text}${last ? "\n" : ""}`);
    else this.#o.write(`${text}\n`);
  }
}

/** Reads a whole file in 4 MiB parts, reporting progress against its size. */
export async function readWithProgress(
  path: string,
  label: string,
  options: ProgressOptions = {},
): Promise<Uint8Array> {
  using file = await Deno.open(path, { read: true });
  const size = (await file.stat()).size;
  const out = new Uint8Array(size);
  const progress = new Progress(label, size, { ...options, unit: "bytes" });
  let at = 0;
  while (at < size) {
    const n = await file.read(out.subarray(at, Math.min(size, at + 4 * 1024 * 1024)));
    if (n === null) break;
    at += n;
    progress.update(at);
  }
  progress.finish();
  return at === size ? out : out.subarray(0, at);
}
