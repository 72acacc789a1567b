/**
 * Attack traffic for the proposer: distinct, correctly signed envelopes of about 1.9 MB from a key that owns
 * nothing, each refused as `invalid_body` (an extra `pad` field). Built from one canonical template so a test
 * can make thousands quickly: only the nonce differs, the digest is native SHA-256.
 */
import { createHash } from "node:crypto";
import * as secp from "@noble/secp256k1";
import { canonical } from "../../core/canonical.ts";
import { toHex } from "../../core/hex.ts";
import { encodeDer } from "../../ledger/der.ts";
import { keyFromSeed } from "../../ledger/keys.ts";

/** The size of one flood envelope's padding. */
export const FLOOD_PAD = 1_900_000;

/** A maker of flood envelopes for `chainId`: `make(i)` is the raw bytes of the i-th. */
export function floodMaker(chainId: string): (i: number) => Uint8Array {
  const key = keyFromSeed("f1".repeat(32));
  const template = canonical({
    amount: 1,
    chain_id: chainId,
    kind: "transfer",
    nonce: 0,
    pad: "x".repeat(FLOOD_PAD),
    to: key.accountId,
  });
  const [before, after] = template.split(`"nonce":0,`) as [string, string];
  const encoder = new TextEncoder();
  return (i) => {
    const body = `${before}"nonce":${i},${after}`;
    const digest = createHash("sha256").update(body).digest();
    const compact = secp.sign(digest, key.privateKey, { prehash: false, lowS: true, extraEntropy: false });
    const r = BigInt("0x" + toHex(compact.subarray(0, 32)));
    const s = BigInt("0x" + toHex(compact.subarray(32, 64)));
    const signature = toHex(encodeDer(r, s));
    return encoder.encode(`{"body":${body},"public_key":"${key.accountId}","signature":"${signature}"}`);
  };
}

/** Broadcasts `count` flood envelopes over `parallel` connections; returns how often each code came back. */
export async function flood(
  url: string,
  make: (i: number) => Uint8Array,
  count: number,
  parallel = 4,
): Promise<Map<string, number>> {
  const codes = new Map<string, number>();
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const raw = make(next++);
      const res = await fetch(`${url}/broadcast_tx`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: raw as Uint8Array<ArrayBuffer>,
      });
      const answer = JSON.parse(await res.text()) as { check?: { code?: string }; code?: string };
      const code = answer.check?.code ?? answer.code ?? `http ${res.status}`;
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return codes;
}

/**
 * The resident set size of process `pid` in bytes, from `ps` (reading another process's `/proc/<pid>/status`
 * needs `--allow-all` under Deno, which `deno task test` does not grant; it grants `--allow-run`).
 */
export function rssOf(pid: number): number {
  const out = new Deno.Command("ps", {
    args: ["-o", "rss=", "-p", String(pid)],
    stdout: "piped",
    stderr: "piped",
  })
    .outputSync();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success || !/^\d+$/.test(text)) {
    throw new Error(`Cannot read the RSS of ${pid}: ps printed "${text}"`);
  }
  return Number(text) * 1024;
}
