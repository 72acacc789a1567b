/**
 * The actor of the crash matrix, run as a real process:
 *
 *   deno run -A tests/faults/crash_actor.ts run   --home DIR --sink URL   delivers the two operations
 *   deno run -A tests/faults/crash_actor.ts serve --home DIR --sink URL   serves the actor over HTTP
 *
 * Each operation records a counter event, draws time and randomness from its context, writes an external
 * file, notifies a counting HTTP server, submits a signed transaction to it, and records a second event.
 * `run` prints one canonical JSON line per operation (`{"op":..,"result":..}`) and a last line with the
 * crash points reached. `serve` prints `{"url":..}` and serves until stdin closes.
 *
 * The external effects are idempotent by key, which is what makes them exactly once: a step's key is the
 * same on every attempt; the file is written under its key (temp file + rename, content fixed by journaled
 * values) and the HTTP server keeps the first delivery per key. The transaction is signed with fresh
 * randomness, so a second signature would show as a second hash at the server.
 */
import { parseArgs } from "node:util";
import { canonical, canonicalBytes } from "../../core/canonical.ts";
import { crashPointHits } from "../../actors/runtime/crash_point.ts";
import { defineActor, DurableActor } from "../../actors/runtime/durable.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { OPERATIONS } from "./_operations.ts";
import { serveActor } from "../../actors/runtime/actor_http.ts";
import { Submitter } from "../../actors/runtime/submit.ts";
import { loadToken } from "../../actors/runtime/token.ts";
import { TransportClient } from "../../actors/runtime/transport.ts";
import { counter, machines } from "../actors/runtime/_counter.ts";

const ENV = { height: 1, time: 0, params: {} };

const { positionals, values } = parseArgs({
  args: Deno.args,
  options: { home: { type: "string" }, sink: { type: "string" } },
  allowPositionals: true,
});
const home = values.home!;
const sink = new TransportClient(values.sink!, null, { timeoutMs: 5000 });
await Deno.mkdir(`${home}/effects`, { recursive: true });
const journal = Journal.open(`${home}/journal.sqlite`);
const submitter = new Submitter(journal, sink, { confirmMs: 5000, pollMs: 20 });

const actor = defineActor({
  name: "crasher",
  machines,
  handlers: {
    async work(ctx, input) {
      const n = (input as { n: number }).n;
      const tally = ctx.workflow("tally", counter, { status: "open", n: 0 });
      const first = tally.record({ type: "add", by: n }, ENV);
      if (!first.ok) throw new Error(first.message);
      const at = await ctx.now();
      const nonce = await ctx.random(8);
      const content = canonical({ op: ctx.opId, n, at, nonce });
      const file = await ctx.step("write_file", async (key) => {
        const tmp = `${home}/effects/.${key}.${crypto.randomUUID()}`;
        await Deno.writeTextFile(tmp, content);
        const f = await Deno.open(tmp, { read: true });
        await f.sync();
        f.close();
        await Deno.rename(tmp, `${home}/effects/${key}.json`);
        return { key, bytes: content.length };
      });
      const notified = await ctx.step("notify", async (key) => {
        const answer = await sink.json("POST", "/deliver", { key, op: ctx.opId, n, nonce });
        return { key, answer };
      });
      const tx = await ctx.step("submit", async () => {
        const rec = await submitter.submit(
          `intent:${ctx.opId}`,
          // Fresh randomness in every signature: signing twice would produce a second hash.
          () => canonicalBytes({ intent: ctx.opId, n, salt: crypto.randomUUID() }),
        );
        return { hash: rec.hash, status: rec.status, height: rec.height };
      });
      const second = tally.record({ type: "add", by: 1 }, ENV);
      if (!second.ok) throw new Error(second.message);
      return { n: second.state.n, at, nonce, file, notified, tx };
    },
  },
  queries: { tally: (ctx) => ctx.state("tally") as unknown as null },
});

const running = await DurableActor.open(journal, actor);
if (positionals[0] === "run") {
  for (const op of OPERATIONS) {
    const bytes = await running.deliver("work", op.opId, op.input);
    console.log(canonical({ op: op.opId, result: new TextDecoder().decode(bytes) }));
  }
  console.log(canonical({ hits: Object.fromEntries(crashPointHits()) }));
  journal.close();
} else if (positionals[0] === "serve") {
  const token = await loadToken(`${home}/http.token`);
  const server = serveActor(running, { token, bodyTimeoutMs: 500 });
  console.log(canonical({ url: server.url }));
  for await (const _ of Deno.stdin.readable) { /* serve until stdin closes */ }
  await server.close();
  journal.close();
} else {
  console.error(`error: unknown mode ${positionals[0]}, expected run or serve`);
  Deno.exit(2);
}
