import assert from "node:assert/strict";
import { sha256Hex } from "../../core/digest.ts";
import { componentFiles } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { clipScale } from "../../kernels/stage.ts";
import { openStage } from "../../kernels/stage_io.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import { errorCode } from "./_gradcheck.ts";
import { honestStep, THREE_STAGES } from "./_step_fixture.ts";
import { TINY, TINY_BATCH } from "./_tiny.ts";

Deno.test("stage io: workers holding only their own components produce the step's committed roots", () => {
  const { out } = honestStep();
  const files = componentFiles(initModel(TINY, 9));
  const stages = THREE_STAGES.map((partition) =>
    openStage({
      config: TINY,
      partition,
      components: Object.fromEntries(partition.map((n) => [n, files[n]!])),
      batch: TINY_BATCH,
    })
  );
  let x: Uint8Array | null = null;
  stages.forEach((s, i) => {
    x = s.forward(x);
    assert.equal(sha256Hex(x), out.traces[i]!.output);
  });
  const head = stages[0]!.head(x!);
  assert.equal(toHexFloat(head.loss), out.record.loss);
  assert.equal(sha256Hex(head.headGradient), out.traces[0]!.head_gradient);
  let g = head.headGradient;
  const norms: number[] = [];
  for (let i = stages.length - 1; i >= 0; i--) {
    const r = stages[i]!.backward(g);
    norms[i] = r.normSquared;
    assert.equal(r.gradientIn ? sha256Hex(r.gradientIn) : null, out.traces[i]!.gradient_in);
    if (r.gradientIn) g = r.gradientIn;
  }
  assert.deepEqual(norms.map(toHexFloat), out.record.norms);
  const scale = clipScale(norms, 0.5);
  stages.forEach((s, i) => {
    const updated = s.update(0.25, scale);
    for (const [name, bytes] of Object.entries(updated)) {
      assert.equal(sha256Hex(bytes), out.traces[i]!.components[name]);
    }
  });
});

Deno.test("stage io: phases out of order and missing components are refused", () => {
  const files = componentFiles(initModel(TINY, 9));
  const s = openStage({
    config: TINY,
    partition: ["block_001"],
    components: { block_001: files.block_001! },
    batch: TINY_BATCH,
  });
  assert.equal(errorCode(() => s.forward(null)), "invalid_transition");
  assert.equal(errorCode(() => s.head(new Uint8Array())), "invalid_transition");
  assert.equal(errorCode(() => s.backward(new Uint8Array())), "invalid_transition");
  assert.equal(errorCode(() => s.update(0.1, 1)), "invalid_transition");
  assert.equal(
    errorCode(() => openStage({ config: TINY, partition: ["block_002"], components: {}, batch: TINY_BATCH })),
    "invalid_model",
  );
  assert.equal(
    errorCode(() =>
      openStage({
        config: TINY,
        partition: ["block_002"],
        components: { block_002: files.block_001!.slice(0, 9) },
        batch: TINY_BATCH,
      })
    ),
    "invalid_tensor",
  );
});

Deno.test("stage io: each phase runs once; the same update again returns the same files, another is refused", () => {
  const { out } = honestStep();
  const files = componentFiles(initModel(TINY, 9));
  const partition = THREE_STAGES[2]!;
  const s = openStage({
    config: TINY,
    partition,
    components: Object.fromEntries(partition.map((n) => [n, files[n]!])),
    batch: TINY_BATCH,
  });
  // Stage 2's input is stage 1's output; its output gradient is the head's gradient (the last stage).
  const input = out.objects.get(out.traces[1]!.output)!;
  assert.equal(sha256Hex(s.forward(input)), out.traces[2]!.output);
  const g = out.objects.get(out.traces[2]!.gradient_out)!;
  const back = s.backward(g);
  assert.equal(sha256Hex(back.gradientIn!), out.traces[2]!.gradient_in);
  assert.equal(errorCode(() => s.backward(g)), "invalid_transition");
  const first = s.update(0.25, out.scale);
  const again = s.update(0.25, out.scale);
  for (const name of partition) {
    assert.equal(sha256Hex(first[name]!), out.traces[2]!.components[name]);
    assert.equal(sha256Hex(again[name]!), out.traces[2]!.components[name]);
  }
  assert.equal(errorCode(() => s.update(0.5, out.scale)), "invalid_transition");
  assert.equal(errorCode(() => s.update(0.25, out.scale / 2)), "invalid_transition");
  // The refused calls changed nothing: the same update still returns the committed files.
  const last = s.update(0.25, out.scale);
  for (const name of partition) assert.equal(sha256Hex(last[name]!), out.traces[2]!.components[name]);
});
