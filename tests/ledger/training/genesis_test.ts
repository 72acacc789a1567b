import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import { parseGenesis } from "../../../genesis/schema.ts";
import { testGenesis } from "../_fixture.ts";
import { batches, devnetModel } from "./_harness.ts";

const model = devnetModel();
const training = {
  learning_rate: toHexFloat(0.01),
  clip: toHexFloat(1),
  batches: batches(2) as unknown as JsonValue,
};

function withTraining(over: JsonObject = {}): JsonObject {
  return {
    ...testGenesis(),
    model: { manifest: model.manifest as unknown as JsonValue, root: model.root },
    training,
    ...over,
  };
}

function refused(g: JsonObject, pattern: RegExp): void {
  assert.throws(
    () => parseGenesis(g),
    (e) => e instanceof ProtocolError && e.code === "invalid_value" && pattern.test(e.message),
  );
}

Deno.test("a genesis with a model and a training section parses into the training setup", () => {
  const g = parseGenesis(withTraining());
  assert.equal(g.training?.root, model.root);
  assert.equal(g.training?.learning_rate, "0x1.47ae147ae147bp-7");
  assert.equal(g.training?.batches.length, 2);
  assert.equal(parseGenesis(testGenesis()).training, null);
});

Deno.test("a training section is refused without a model, with a wrong root, a bad rate or clip, or a batch the model cannot read", () => {
  refused(withTraining({ model: null }), /needs model/);
  refused(
    withTraining({ model: { manifest: model.manifest as unknown as JsonValue, root: "ab".repeat(32) } }),
    /model.root/,
  );
  refused(withTraining({ training: { ...training, learning_rate: toHexFloat(-1) } }), /learning_rate/);
  refused(withTraining({ training: { ...training, clip: toHexFloat(0) } }), /clip/);
  refused(withTraining({ training: { ...training, clip: 1 } }), /clip/);
  refused(withTraining({ training: { ...training, batches: [] } }), /batches/);
  refused(
    withTraining({ training: { ...training, batches: [{ input_ids: [[4096]], labels: [[1]] }] } }),
    /batches\[0\]/,
  );
  refused(withTraining({ training: { ...training, extra: 1 } }), /training is not/);
});
