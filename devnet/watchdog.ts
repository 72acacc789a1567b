/**
 * The devnet's watchdog: a small process the supervisor starts with a pipe on its stdin. When that pipe
 * closes (the supervisor ended, even by SIGKILL, which the kernel turns into end-of-file), it SIGKILLs every
 * child the supervisor's `pids.json` lists whose command line names the devnet directory, so a killed
 * devnet leaves no processes behind. Usage: `deno run --allow-read --allow-run watchdog.ts <pid> <dir>`.
 */
import { alive } from "./supervisor.ts";
/** Waits for end-of-file on stdin, then ends the children of supervisor `pid` listed in `dir/pids.json`. */
export async function watch(pid: number, dir: string): Promise<number> {
  for await (const _ of Deno.stdin.readable) {
    // the supervisor never writes; the loop ends when it is gone
  }
  let listed: { supervisor?: number; children?: { pid: number }[] } = {};
  try {
    listed = JSON.parse(await Deno.readTextFile(`${dir}/pids.json`));
  } catch {
    return 0;
  }
  if (listed.supervisor !== pid) return 0; // another supervisor owns the devnet now
  let ended = 0;
  for (const c of listed.children ?? []) {
    if (!(await alive(c.pid, dir))) continue;
    try {
      Deno.kill(c.pid, "SIGKILL");
      ended++;
    } catch {
      // it ended by itself meanwhile
    }
  }
  return ended;
}

if (import.meta.main) {
  const [pid, dir] = Deno.args;
  if (!pid || !/^\d+$/.test(pid) || !dir) {
    console.error("usage: watchdog.ts <supervisor pid> <devnet dir>");
    Deno.exit(2);
  }
  await watch(Number(pid), dir);
}
