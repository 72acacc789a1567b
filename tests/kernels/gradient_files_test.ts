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
  // Other arrays of the same names and sizes for a name alloc served are copied into its views, those
  // already there are not; different names or sizes go to a new file, as for any other name.
  const other = files.alloc("x", { w: [2], v: [1] });
  other.v!.data[0] = -1.5;
  const fresh = new Float32Array([3, 4]);
  const copied = files.keep("x", { w: { shape: [2], data: fresh }, v: other.v! });
  assert.notEqual(copied.w!.data, fresh);
  assert.equal(copied.w!.data, other.w!.data, "copied into the view alloc gave");
  assert.equal(copied.v!.data, other.v!.data);
  assert.deepEqual(
    files.get("x"),
    writeSafetensors({ w: { shape: [2], data: fresh }, v: { shape: [1], data: new Float32Array([-1.5]) } }),
  );
  const mismatched = files.alloc("y", { w: [3] });
  const kept3 = files.keep("y", { w: { shape: [2], data: fresh } });
  assert.notEqual(kept3.w!.data, mismatched.w!.data);
  assert.deepEqual(files.get("y"), writeSafetensors({ w: { shape: [2], data: fresh } }));
});

Deno.test("GradientFiles: shared files are on a SharedArrayBuffer with the same bytes; into is alloc", () => {
  const files = new GradientFiles({ shared: true });
  const views = files.into("n", { a: [2], b: [3] })!;
  views.a!.data.set([1, 2]);
  views.b!.data.set([3, -0, 5]);
  const kept = files.keep("n", views);
  assert.ok(files.get("n")!.buffer instanceof SharedArrayBuffer);
  assert.ok(kept.a!.data.buffer instanceof SharedArrayBuffer);
  assert.deepEqual([...files.get("n")!], [...writeSafetensors(kept)]);
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
