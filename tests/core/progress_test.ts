import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { amount, duration, Progress, progressText, readWithProgress } from "../../core/progress.ts";

/** A reporter on a fake clock that collects what it writes. */
function fake(options: { tty?: boolean; json?: boolean }) {
  let t = 0;
  const out: string[] = [];
  return {
    out,
    tick: (ms: number) => (t += ms),
    options: { ...options, write: (s: string) => void out.push(s), now: () => t, plainEveryMs: 2_000 },
  };
}

Deno.test("progress text shows amount, percent, rate and ETA", () => {
  assertEquals(
    progressText("reading x", 45 * 1024 * 1024, 134 * 1024 * 1024, 4_000, "bytes"),
    "reading x  45.0 MiB / 134.0 MiB  33%  11.3 MiB/s  ETA 8s",
  );
  assertEquals(progressText("merges", 1_500, null, 3_000, "items"), "merges  1,500  500/s");
  // Before `rateAfterMs` the rate and ETA are left out; from it on they are shown.
  assertEquals(
    progressText("uploaded", 2_048, 1024 * 1024, 900, "bytes", 2_000),
    "uploaded  2.0 KiB / 1.0 MiB  0%",
  );
  assertEquals(
    progressText("uploaded", 512 * 1024, 1024 * 1024, 2_000, "bytes", 2_000),
    "uploaded  512.0 KiB / 1.0 MiB  50%  256.0 KiB/s  ETA 2s",
  );
  assertEquals([amount(1023, "bytes"), amount(1536, "bytes"), duration(125), duration(3725)], [
    "1023 B",
    "1.5 KiB",
    "2m05s",
    "1h02m",
  ]);
});

Deno.test("progress rewrites one line on a terminal, writes throttled plain lines otherwise, and JSON with --json", () => {
  const tty = fake({ tty: true });
  const p = new Progress("job", 100, tty.options);
  tty.tick(1_000), p.update(10);
  tty.tick(50), p.update(20); // within 100 ms: not redrawn
  tty.tick(950), p.update(50);
  p.finish();
  assertEquals(tty.out, [
    "\r\x1b[2Kjob  10 / 100  10%  10/s  ETA 9s",
    "\r\x1b[2Kjob  50 / 100  50%  25/s  ETA 2s",
    "\r\x1b[2Kjob  50 / 100  50%  25/s  ETA 2s\n",
  ]);
  const plain = fake({ tty: false });
  const q = new Progress("job", 100, plain.options);
  for (let i = 1; i <= 10; i++) (plain.tick(500), q.update(i * 10));
  q.finish();
  assertEquals(plain.out, [
    "job  40 / 100  40%  20/s  ETA 3s\n",
    "job  80 / 100  80%  20/s  ETA 1s\n",
    "job  100 / 100  100%  20/s  ETA 0s\n",
  ]);
  const json = fake({ json: true, tty: true });
  const r = new Progress("job", 4, json.options);
  json.tick(2_000), r.update(2), r.finish();
  assertEquals(json.out.map((l) => JSON.parse(l)), [
    { event: "progress", label: "job", done: 2, total: 4, unit: "items", rate: 1, eta_s: 2, finished: false },
    { event: "progress", label: "job", done: 2, total: 4, unit: "items", rate: 1, eta_s: 2, finished: true },
  ]);
});

Deno.test("readWithProgress returns the file's exact bytes and ends with a 100% line", async () => {
  const path = await Deno.makeTempFile();
  try {
    const bytes = new Uint8Array(9 * 1024 * 1024 + 7).map((_, i) => (i * 31) & 255);
    await Deno.writeFile(path, bytes);
    const out: string[] = [];
    const read = await readWithProgress(path, "reading", { tty: false, write: (s) => void out.push(s) });
    assertEquals(read, bytes);
    assertEquals(out.at(-1)!.startsWith("reading  9.0 MiB / 9.0 MiB  100%"), true);
  } finally {
    await Deno.remove(path);
  }
});
