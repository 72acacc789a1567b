import assert from "node:assert/strict";
import { GradientFiles } from "../../kernels/gradient_files.ts";
import { PRESETS } from "../../kernels/config.ts";
import { EMBED_TENSOR } from "../../kernels/model.ts";
import { writeSafetensors } from "../../kernels/safetensors.ts";

Deno.test("GradientFiles: keep of the views alloc gave copies nothing; the file is those values' safetensors", () => {
  const files = new GradientFiles();
  assert.ok(files.inFiles, "a little-endian host keeps gradients in files");
  const views = files.alloc("norm", { weight: [3], bias: [2] });
  views.weight!.data.set([1, -2, 0.5]);
  views.bias!.data.set([7, 8]);
  const kept = files.keep("norm", { weight: views.weight!, bias: views.bias! });
  assert.equal(kept.weight!.data, views.weight!.data, "the same array, not a copy");
  assert.equal(kept.bias!.data, views.bias!.data);
  assert.deepEqual(files.get("norm"), writeSafetensors(kept));
  // Other arrays for a name alloc served are copied into a new file, as for any other name.
  const other = files.alloc("x", { w: [2] });
  const fresh = new Float32Array([3, 4]);
  const copied = files.keep("x", { w: { shape: [2], data: fresh } });
  assert.notEqual(copied.w!.data, fresh);
  assert.notEqual(copied.w!.data, other.w!.data);
  assert.deepEqual([...copied.w!.data], [3, 4]);
  assert.deepEqual(files.get("x"), writeSafetensors({ w: { shape: [2], data: fresh } }));
});

Deno.test("GradientFiles: embedView is the embedding gradient file's [V, C] view, kept without a copy", () => {
  const c = PRESETS.devnet, files = new GradientFiles();
  const view = files.embedView(c)!;
  assert.equal(view.length, c.vocab_size * c.hidden_size);
  view[5] = 1.25;
  const kept = files.keep("embed", { [EMBED_TENSOR]: { shape: [c.vocab_size, c.hidden_size], data: view } });
  assert.equal(kept[EMBED_TENSOR]!.data, view);
  assert.equal(files.get("embed")!.byteLength, writeSafetensors(kept).byteLength);
  assert.deepEqual(files.get("embed"), writeSafetensors(kept));
});
