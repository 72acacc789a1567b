import { deepStrictEqual as assertEquals, equal, match, rejects } from "node:assert/strict";
import { Supervisor, taskCommand } from "../../devnet/supervisor.ts";

function pids(dir: string): { supervisor: number; children: { name: string; pid: number }[] } {
  return JSON.parse(Deno.readTextFileSync(`${dir}/pids.json`));
}

Deno.test("a task's deno.json permissions and file are what the supervisor runs", async () => {
  const v = await taskCommand("validator");
  assertEquals(v.flags, [
    "--allow-read",
    "--allow-write",
    "--allow-env=NEURO_KERNELS,GO,NEURO_COMETBFT",
    "--allow-net=127.0.0.1",
    "--allow-run",
  ]);
  match(v.file, /\/tasks\/validator\.ts$/);
});

Deno.test("the supervisor starts a child, knows its URL from its listening line, logs it and stops it", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const sup = await Supervisor.open(dir);
  try {
    const w = await sup.start({ name: "worker-0", task: "worker", args: ["--home", `${dir}/w0`] });
    match(w.url!, /^http:\/\/127\.0\.0\.1:\d+$/);
    assertEquals(pids(dir).children, [{ name: "worker-0", pid: w.pid }]);
    assertEquals(pids(dir).supervisor, Deno.pid);
    const seen: string[] = [];
    w.onLine((l) => seen.push(l));
    equal(seen.some((l) => l === `listening ${w.url}`), true);
    await sup.stop("worker-0");
    assertEquals([sup.names(), pids(dir).children], [[], []]);
    match(await Deno.readTextFile(`${dir}/logs/worker-0.log`), /^account [0-9a-f]{66}\nlistening http/);
  } finally {
    await sup.stopAll();
    await sup.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a child that exits before listening fails its start with its last lines and its exit is reported", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const sup = await Supervisor.open(dir);
  const reported: string[] = [];
  sup.onUnexpectedExit((c, code) => reported.push(`${c.name} ${code}`));
  try {
    await rejects(
      sup.start({ name: "worker-0", task: "worker", args: ["--home", `${dir}/w0`, "--port", "x"] }),
      /Cannot start worker-0: it exited with 2 before listening:\nerror: --port is x, expected 0-65535/,
    );
    assertEquals(reported, ["worker-0 2"]);
    assertEquals(sup.names(), []);
  } finally {
    await sup.stopAll();
    await sup.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a listening child that dies is forgotten and its exit is reported with its URL", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const sup = await Supervisor.open(dir);
  const reported: string[] = [];
  let seen: () => void = () => {};
  const exitSeen = new Promise<void>((r) => (seen = r));
  sup.onUnexpectedExit((c, code) => (reported.push(`${c.name} ${c.url} ${code}`), seen()));
  try {
    const w = await sup.start({ name: "worker-0", task: "worker", args: ["--home", `${dir}/w0`] });
    Deno.kill(w.pid, "SIGKILL");
    await exitSeen;
    assertEquals(reported, [`worker-0 ${w.url} 137`]);
    assertEquals(sup.names(), []);
    // The pid file is rewritten in the background after the exit.
    for (let i = 0; i < 200 && pids(dir).children.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assertEquals(pids(dir).children, []);
  } finally {
    await sup.stopAll();
    await sup.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("opening a devnet whose supervisor died SIGKILLs the children it left; a live supervisor is refused", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  const first = await Supervisor.open(dir);
  const holder = new Deno.Command("sh", { args: ["-c", "sleep 30", "devnet"] }).spawn();
  try {
    const w = await first.start({ name: "worker-0", task: "worker", args: ["--home", `${dir}/w0`] });
    const dead = new Deno.Command("true").spawn();
    const deadPid = dead.pid;
    await dead.status;
    Deno.writeTextFileSync(`${dir}/pids.json`, JSON.stringify({ ...pids(dir), supervisor: deadPid }));
    const second = await Supervisor.open(dir);
    await second.close();
    const status = await w.process.status;
    assertEquals([status.success, status.signal], [false, "SIGKILL"]);
    Deno.writeTextFileSync(`${dir}/pids.json`, JSON.stringify({ supervisor: holder.pid, children: [] }));
    await rejects(Supervisor.open(dir), /Cannot run the devnet: another devnet \(pid \d+\) is running on /);
  } finally {
    holder.kill("SIGKILL");
    await holder.status;
    await first.stopAll();
    await first.close();
    await Deno.remove(dir, { recursive: true });
  }
});
