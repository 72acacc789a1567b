import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import type { AccountKey } from "../../ledger/keys.ts";
import { alice, bob, consSeeds, owners, testGenesis, tx } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, prng, startProc, stopProc, until } from "../e2e/_ledger_procs.ts";

const SEED = Number(Deno.env.get("NEURO_SEED") ?? Date.now() % 100_000);

interface Sent {
  readonly hash: string;
  readonly nonce: number;
  readonly amount: number;
  readonly body: string;
  /** The answer: `accepted`, `held` (a future nonce journaled until its gap closes), or null when unknown. */
  answer: "accepted" | "held" | null;
}

/** Broadcasts `s` and records its answer; a refusal fails the test, a dead connection leaves it unknown. */
async function broadcast(url: string, s: Sent): Promise<void> {
  let answer: { check: { ok: boolean; held?: boolean; code?: string } };
  try {
    const res = await fetch(`${url}/broadcast_tx`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: s.body,
    });
    answer = JSON.parse(await res.text());
  } catch {
    return; // the proposer died with this request in flight: its outcome is unknown
  }
  if (!answer.check.ok) throw new Error(`nonce ${s.nonce} refused: ${answer.check.code}`);
  s.answer = answer.check.held ? "held" : "accepted";
}

/**
 * Sends `count` transfers of `key` to bob over `lanes` concurrent lanes (so nonces arrive out of order). The
 * amounts are `base + nonce`; with the fee, all `count` must fit the sender's genesis balance, since how many
 * are sent before the kill depends on the machine's speed (a refusal for funds would fail the test).
 */
async function pipeline(
  url: string,
  key: AccountKey,
  base: number,
  count: number,
  lanes: number,
  out: Sent[],
) {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const nonce = next++;
      const amount = base + nonce;
      const envelope = tx(key, "transfer", nonce, { to: bob.accountId, amount });
      const body = canonical(envelope);
      const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body)).then((d) =>
        [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("")
      );
      const sent: Sent = { hash, nonce, amount, body, answer: null };
      out.push(sent);
      await broadcast(url, sent);
      if (sent.answer === null) return;
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

Deno.test(`after a SIGKILL at a random moment under load every transaction answered accepted is committed exactly once, and every held one once the client re-sends what it lost (seed ${SEED})`, async () => {
  const random = prng(SEED);
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 1));
    const first = await startProc(`${dir}/v0`, path, { intervalMs: 150 });
    procs.push(first);
    const sent: Sent[] = [];
    const load = Promise.all([
      pipeline(first.url, alice, 1, 400, 8, sent),
      pipeline(first.url, owners[0]!, 1_000, 400, 8, sent),
    ]);
    // The random moment counts from the first acceptance, so a slow start cannot leave nothing to check.
    await until("a first acceptance", () => sent.some((s) => s.answer !== null), 30_000);
    const killAt = Math.floor(random() * 1_200);
    await new Promise((r) => setTimeout(r, killAt));
    first.child.kill("SIGKILL");
    await load;
    await first.exited;
    const accepted = sent.filter((s) => s.answer === "accepted");
    const held = sent.filter((s) => s.answer === "held");
    const unknown = sent.filter((s) => s.answer === null);
    console.log(
      `seed ${SEED}: killed ${killAt} ms after the first acceptance; of ${sent.length} sent ${accepted.length} ` +
        `were answered accepted, ${held.length} held, ${unknown.length} unanswered`,
    );
    equal(accepted.length > 0, true, "the kill came before any transaction was accepted");

    const second = await startProc(`${dir}/v0`, path, { intervalMs: 150 });
    procs.push(second);
    const status = async (s: Sent) =>
      (await getJson<{ status: string }>(`${second.url}/tx?hash=${s.hash}`)).status;
    const allCommitted = (list: Sent[]) => async () => {
      for (const s of list) if ((await status(s)) !== "committed") return false;
      return true;
    };
    // What was answered accepted commits with no help from the client (the journal re-admitted it).
    await until("every accepted transaction to commit", allCommitted(accepted), 120_000);
    // A held one waits for its sender's lower nonces: the client sends again, in nonce order, every
    // transaction whose answer it lost and that the restarted node does not know (lost-ack rule: look up first).
    for (const s of [...unknown].sort((a, b) => a.nonce - b.nonce)) {
      if ((await status(s)) !== "unknown") continue;
      await broadcast(second.url, s);
      equal(s.answer === null, false, `nonce ${s.nonce} got no answer from the restarted node`);
    }
    await until("every accepted, held and re-sent transaction to commit", allCommitted(sent), 120_000);
    let committedSum = 0;
    let committedCount = 0;
    for (const s of sent) {
      if ((await status(s)) === "committed") (committedSum += s.amount, committedCount++);
    }
    const nonces = await Promise.all(
      [alice, owners[0]!].map((k) => getJson<{ nonce: number }>(`${second.url}/account/${k.accountId}`)),
    );
    assertEquals(nonces[0]!.nonce + nonces[1]!.nonce, committedCount);
    const bobNow = await getJson<{ balance: number }>(`${second.url}/account/${bob.accountId}`);
    assertEquals(bobNow.balance, committedSum);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
