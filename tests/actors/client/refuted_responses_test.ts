import assert from "node:assert/strict";
import { refutedResponses } from "../../../actors/client/ask.ts";
import type { InferenceState } from "../../../workflows/inference.ts";

const at = (status: InferenceState["status"]) => ({ status }) as unknown as InferenceState;

Deno.test("the client counts refuted responses from the job's state and claim count, whatever states its poll missed", () => {
  assert.equal(refutedResponses(at("requested"), 0), 0);
  assert.equal(refutedResponses(at("responded"), 1), 0);
  // The retry answered before the client polled again: the first response was refuted all the same.
  assert.equal(refutedResponses(at("responded"), 2), 1);
  assert.equal(refutedResponses(at("settled"), 1), 0);
  assert.equal(refutedResponses(at("settled"), 3), 2);
  assert.equal(refutedResponses(at("refuted"), 1), 1);
  assert.equal(refutedResponses(at("reopened"), 2), 2);
  assert.equal(refutedResponses(at("expired"), 0), 0);
  assert.equal(refutedResponses(at("expired"), 2), 2);
});
