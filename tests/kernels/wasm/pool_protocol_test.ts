import assert from "node:assert/strict";
import { SPIN_MS, spinsOn, spinWhile } from "../../../kernels/wasm/pool_protocol.ts";

Deno.test("spinWhile returns a changed word at once and the unchanged word only after polling SPIN_MS", () => {
  const ctl = new Int32Array(new SharedArrayBuffer(8));
  ctl[1] = 7;
  assert.equal(spinWhile(ctl, 1, 3), 7); // already different: no polling
  const t0 = performance.now();
  assert.equal(spinWhile(ctl, 1, 7), 7); // nobody changes it: gives up
  assert.ok(performance.now() - t0 >= SPIN_MS, `returned after ${performance.now() - t0} ms`);
});

Deno.test("spinWhile sees a word another thread stores while it polls", () => {
  const ctl = new Int32Array(new SharedArrayBuffer(8));
  const source = `self.onmessage = (e) => { const c = new Int32Array(e.data); ` +
    `while (Atomics.load(c, 0) === 0) Atomics.wait(c, 0, 0, 50); Atomics.store(c, 1, 42); };`;
  const worker = new Worker(`data:application/javascript,${encodeURIComponent(source)}`, { type: "module" });
  try {
    worker.postMessage(ctl.buffer);
    let seen = 0;
    for (let tries = 0; seen !== 42 && tries < 5000; tries++) { // each try polls SPIN_MS: bounded, not timed
      Atomics.store(ctl, 0, 1);
      Atomics.notify(ctl, 0);
      seen = spinWhile(ctl, 1, 0);
    }
    assert.equal(seen, 42);
  } finally {
    worker.terminate();
  }
});

Deno.test("spinsOn: a thread with a core of its own polls SPIN_MS, one beyond the cores does not poll", () => {
  assert.deepEqual([1, 2, 3].map((t) => spinsOn(t, 2)), [SPIN_MS, SPIN_MS, 0]);
  assert.equal(spinsOn(1, 1), SPIN_MS);
  assert.equal(spinsOn(2, 1), 0);
});
