/**
 * Raw-socket clients that misbehave the way a slowloris attacker does: open a TCP connection to 127.0.0.1,
 * send some bytes (or trickle them), never finish, and record when and how the server ends the connection.
 */

/** One attacking connection. */
export interface Held {
  /** Resolves when the server closes the connection: after how many ms, and what it sent first. */
  readonly closed: Promise<{ ms: number; answer: string }>;
  /** Stops trickling and closes our side (after the test). */
  stop(): void;
}

/** Connects, sends `prefix`, then (when `trickle` is given) one more byte of it every `trickle` ms. */
export async function hold(port: number, prefix: string, trickle?: number): Promise<Held> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const start = performance.now();
  let open = true;
  if (prefix) await conn.write(new TextEncoder().encode(prefix)).catch(() => 0);
  const timer = trickle === undefined
    ? undefined
    : setInterval(() => open && conn.write(new TextEncoder().encode("a")).catch(() => 0), trickle);
  const closed = (async () => {
    const buf = new Uint8Array(4096);
    let answer = "";
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch {
        n = null;
      }
      if (n === null) break;
      answer += new TextDecoder().decode(buf.subarray(0, n));
    }
    open = false;
    clearInterval(timer);
    return { ms: performance.now() - start, answer };
  })();
  return {
    closed,
    stop() {
      clearInterval(timer);
      if (open) {
        open = false;
        try {
          conn.close();
        } catch { /* closed already */ }
      }
    },
  };
}
