import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { ProtocolError } from "../../core/errors.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import {
  afterEvaluation,
  epochSplit,
  loadScenario,
  newScenario,
  saveScenario,
  type Scenario,
  sponsorBudget,
  targetSteps,
} from "../../devnet/scenario_journal.ts";
import { phaseLabel, progressLine } from "../../devnet/scenario.ts";

const ROOT = "ab".repeat(32);

Deno.test("the scenario journal round-trips through its file and a missing file means a new scenario", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assertEquals(await loadScenario(dir), null);
    const s: Scenario = {
      ...newScenario({ epochs: 2, steps: 5, forge: true }),
      phase: "after",
      cohorts: [ROOT],
      forge_from_height: 61,
      forge_claim: "cd".repeat(32),
    };
    await saveScenario(dir, s);
    assertEquals(await loadScenario(dir), s);
    assertEquals(
      Deno.readTextFileSync(`${dir}/scenario.json`),
      `{"cohorts":["${ROOT}"],"epoch":1,"epochs":2,"forge":true,"forge_claim":"${
        "cd".repeat(32)
      }","forge_from_height":61,"phase":"after","steps":5}\n`,
    );
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["scenario.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a malformed scenario journal (or one of an older devnet) is refused with invalid_value and left as it is", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const good = JSON.stringify(newScenario({ epochs: 2, steps: 5, forge: true }));
    for (
      const text of [
        "{}",
        '{"after":2,"forge":true,"forge_claim":null,"forge_from_height":null,"phase":"after","steps":5}',
        good.replace('"phase":"cohort"', '"phase":"later"'),
        good.replace('"epoch":1', '"epoch":3'),
        good.replace('"cohorts":[]', '"cohorts":["nope"]'),
        "nope",
      ]
    ) {
      await Deno.writeTextFile(`${dir}/scenario.json`, text);
      let code = "";
      try {
        await loadScenario(dir);
      } catch (e) {
        code = (e as ProtocolError).code;
      }
      assertEquals(code, text === "nope" ? "invalid_json" : "invalid_value", text);
      assertEquals(await Deno.readTextFile(`${dir}/scenario.json`), text);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("epoch 1 forges before the last two steps (first in a 1- or 2-step cohort); later epochs train their whole schedule honestly", () => {
  const split = (steps: number, forge: boolean, epoch = 1) => {
    const s = { ...newScenario({ epochs: 3, steps, forge }), epoch };
    return [
      epochSplit(s).before,
      epochSplit(s).after,
      targetSteps(s, "honest"),
      targetSteps(s, "forge"),
      targetSteps(s, "evaluate"),
    ];
  };
  assertEquals(split(5, true), [3, 2, 3, 4, 5]);
  assertEquals(split(3, true), [1, 2, 1, 2, 3]);
  assertEquals(split(2, true), [0, 2, 0, 1, 2]);
  assertEquals(split(1, true), [0, 1, 0, 1, 1]);
  assertEquals(split(4, false), [4, 0, 4, 4, 4]);
  // Settled steps are counted over every epoch: epoch 2 of 5-step cohorts ends at 10, without a forge.
  assertEquals(split(5, true, 2), [5, 0, 10, 10, 10]);
  assertEquals(sponsorBudget(newScenario({ epochs: 2, steps: 5, forge: true })), 28);
});

Deno.test("after epoch 1's evaluation come the paid answers, then the next epoch, and after the last epoch done", () => {
  const s = {
    ...newScenario({ epochs: 2, steps: 3, forge: true }),
    phase: "evaluate" as const,
    forge_claim: ROOT,
  };
  const inference = afterEvaluation(s);
  assertEquals([inference.epoch, inference.phase], [1, "inference"]);
  const second = afterEvaluation(inference);
  assertEquals([second.epoch, second.phase, second.forge_claim, second.forge_from_height], [
    2,
    "cohort",
    null,
    null,
  ]);
  assertEquals(afterEvaluation({ ...second, phase: "evaluate" }).phase, "done");
  const one = { ...newScenario({ epochs: 1, steps: 3, forge: false }), phase: "evaluate" as const };
  assertEquals(afterEvaluation(afterEvaluation(one)).phase, "done");
});

Deno.test("progress lines show the sponsor's step, phase, height and loss and the referee's challenges only", () => {
  const s = { ...newScenario({ epochs: 2, steps: 5, forge: true }), phase: "honest" as const };
  const sponsor = `{"attempt":1,"event":"step","height":13,"loss":"${
    toHexFloat(8.38888)
  }","phase":"claim","step":2}`;
  assertEquals(progressLine("sponsor", sponsor, s), "[e1 honest] step 3 claim height=13 loss=8.3889");
  assertEquals(phaseLabel({ ...s, epochs: 1 }), "[honest]");
  assertEquals(
    progressLine(
      "referee",
      '{"claim_id":"6183678ad303991b","detail":"fraud (optimizer update)","event":"challenge","stage":1}',
      s,
    ),
    "[e1 honest] referee challenge 6183678ad303 stage 1: fraud (optimizer update)",
  );
  assertEquals(
    progressLine("referee", '{"claim_id":"61","detail":"match","event":"verdict","stage":0}', s),
    null,
  );
  assertEquals(progressLine("referee", '{"event":"status","height":4}', s), null);
  assertEquals(
    progressLine("sponsor", "error: Cannot reach the chain", s),
    "sponsor: error: Cannot reach the chain",
  );
  assertEquals(progressLine("sponsor", "Download https://registry", s), null);
});
