import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { groupComponents, modelFromGguf } from "../../kernels/gguf_model.ts";
import { componentNames, componentSpec } from "../../kernels/model.ts";
import type { Tensor } from "../../kernels/tensor.ts";
import { writeGguf } from "./gguf_writer.ts";
import { ggufTensors, hfTensors, metadata } from "./gguf_tiny_llama.ts";

const bytes = writeGguf({ metadata: metadata(), tensors: ggufTensors() });

Deno.test("a llama GGUF becomes components embed, norm and block_000.. with the tensors of PROTOCOL §10.2", () => {
  const model = modelFromGguf(readGguf(bytes));
  assert.deepEqual(Object.keys(model.components), ["embed", "norm", "block_000", "block_001"]);
  assert.deepEqual(componentNames(model.config), Object.keys(model.components));
  const hf = hfTensors();
  for (const name of componentNames(model.config)) {
    const spec = componentSpec(model.config, name);
    assert.deepEqual(Object.keys(model.components[name]!).sort(), Object.keys(spec).sort(), name);
    for (const [tensor, shape] of Object.entries(spec)) {
      assert.deepEqual(model.components[name]![tensor]!.shape, shape);
    }
  }
  assert.deepEqual(
    model.components.embed!["embed_tokens.weight"]!.data,
    hf.get("model.embed_tokens.weight")!.data,
  );
  assert.deepEqual(model.components.norm!["norm.weight"]!.data, hf.get("model.norm.weight")!.data);
  assert.deepEqual(
    model.components.block_001!["self_attn.q_proj.weight"]!.data,
    hf.get("model.layers.1.self_attn.q_proj.weight")!.data,
  );
});

Deno.test("grouping refuses a missing tensor and a tensor of a block the config does not have", () => {
  const model = modelFromGguf(readGguf(bytes));
  const tensors: Record<string, Tensor> = Object.fromEntries(hfTensors());
  const missing = { ...tensors };
  delete missing["model.layers.0.mlp.up_proj.weight"];
  const extra = {
    ...tensors,
    "model.layers.2.mlp.up_proj.weight": tensors["model.layers.0.mlp.up_proj.weight"]!,
  };
  for (
    const [input, message] of [
      [missing, "Cannot group model: tensor model.layers.0.mlp.up_proj.weight is missing"],
      [extra, "Cannot group model: unexpected tensor a block beyond the config"],
    ] as const
  ) {
    assert.throws(() => groupComponents(model.config, input), (e: unknown) => {
      assert.ok(e instanceof ProtocolError);
      assert.equal(e.code, "invalid_model");
      assert.equal(e.message, message);
      return true;
    });
  }
});
