import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { parseGenesis } from "../../../genesis/schema.ts";
import { Net } from "../training/_harness.ts";
import { SOURCES } from "./_cohort.ts";
import { dataSection } from "./_net.ts";

/** A data-lifecycle genesis (the one `Net` builds), with `edit` applied to it. */
function genesis(edit: (g: JsonObject) => JsonObject = (g) => g): JsonObject {
  return edit(structuredClone(new Net({ data: dataSection() }).genesis));
}

function refusal(g: JsonObject): string {
  try {
    parseGenesis(g);
  } catch (e) {
    if (e instanceof ProtocolError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return "accepted";
}

const withData = (data: JsonObject) => (g: JsonObject) => ({ ...g, data });

Deno.test("a data section pins sources, cursors and the training deadline; its id is the first data root", () => {
  const g = parseGenesis(genesis());
  assert.deepEqual(g.data?.sources, SOURCES);
  assert.deepEqual(g.data?.cursors, { "chat-retention": 0, "chat-train": 0 });
  assert.equal(g.data?.training_blocks, 60);
  assert.equal(g.data?.data_root, id(dataSection()));
  assert.equal(g.data?.tokenizer_root, g.training?.manifest.tokenizer_root);
  const net = new Net({ data: dataSection() });
  assert.deepEqual((net.lifecycle().data as JsonObject).data_root, id(dataSection()));
  assert.equal(net.lifecycle().data_root, id(dataSection()));
  assert.equal(net.lifecycle().batches, 0);
});

Deno.test("data.evaluation_documents sets the retention and fresh documents of every cohort; absent, the state is as before", () => {
  const g = parseGenesis(genesis(withData(dataSection(60, 8))));
  assert.equal(g.data?.evaluation_documents, 8);
  assert.equal(g.data?.data_root, id(dataSection(60, 8)));
  assert.equal(parseGenesis(genesis()).data?.evaluation_documents, undefined);
  const eight = new Net({ data: dataSection(60, 8) });
  assert.equal((eight.lifecycle().data as JsonObject).evaluation_documents, 8);
  const plain = new Net({ data: dataSection() });
  assert.equal((plain.lifecycle().data as JsonObject).evaluation_documents, 32);
  // A genesis without the field stores the lifecycle it always did: no new key in the state.
  const stored = plain.app.store.get("data", "lifecycle") as JsonObject;
  assert.equal(Object.hasOwn(stored, "evaluation_documents"), false);
});

Deno.test("a malformed data section is refused, naming the problem", () => {
  const d = dataSection();
  const cases: [JsonObject, string][] = [
    [
      { ...d, extra: 1 },
      "data is not {sources, cursors, training_blocks} with an optional evaluation_documents",
    ],
    [{ ...d, evaluation_documents: 0 }, "data.evaluation_documents is 0, expected one of 2, 4, 8, 16, 32"],
    [{ ...d, evaluation_documents: 1 }, "data.evaluation_documents is 1, expected one of 2, 4, 8, 16, 32"],
    [{ ...d, evaluation_documents: 12 }, "data.evaluation_documents is 12, expected one of 2, 4, 8, 16, 32"],
    [{ ...d, evaluation_documents: 64 }, "data.evaluation_documents is 64, expected one of 2, 4, 8, 16, 32"],
    [
      { ...d, evaluation_documents: "8" },
      'data.evaluation_documents is "8", expected one of 2, 4, 8, 16, 32',
    ],
    [
      { ...d, evaluation_documents: null },
      "data.evaluation_documents is null, expected one of 2, 4, 8, 16, 32",
    ],
    [{ ...d, sources: [] }, "data.sources is not a list of 1-64 source specs"],
    [
      { ...d, sources: [SOURCES[0]!, SOURCES[0]!] as never, cursors: { "chat-retention": 0 } },
      "data.sources repeat a name",
    ],
    [
      { ...d, sources: [{ ...SOURCES[0]!, role: "test" }] as never },
      "data.sources[0]: Cannot accept source spec: role is",
    ],
    [{ ...d, cursors: { "chat-train": 0 } }, "data.cursors must hold exactly one cursor per source name"],
    [{ ...d, cursors: { "chat-retention": -1, "chat-train": 0 } }, "data.cursors.chat-retention is -1"],
    [{ ...d, training_blocks: 0 }, "data.training_blocks is 0, expected an integer >= 1"],
  ];
  for (const [data, message] of cases) {
    const r = refusal(genesis(withData(data)));
    assert.ok(r.startsWith(`invalid_value: Cannot use genesis: ${message}`), r);
  }
});

Deno.test("a data chain lists no training batches, needs a training section and its codec root", () => {
  const batches = new Net().genesis.training as JsonObject;
  assert.match(
    refusal(
      genesis((g) => ({ ...g, training: { ...(g.training as JsonObject), batches: batches.batches! } })),
    ),
    /a chain with a data section lists no training.batches/,
  );
  assert.match(
    refusal(genesis((g) => ({ ...g, training: null, model: null }))),
    /a data section needs a training section/,
  );
  assert.match(
    refusal(genesis((g) => ({ ...g, codec: { root: "c1".repeat(32), manifest: {} } }))),
    /codec.root is "c1c1.*", the model's tokenizer_root is 0{64}/,
  );
  // Without a data section an empty batch list is still refused.
  assert.match(
    refusal(genesis((g) => {
      const { data: _, ...rest } = g;
      return rest;
    })),
    /training.batches is not a list of 1-4096 batches/,
  );
});
