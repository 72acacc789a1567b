import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { ProtocolError } from "../../core/errors.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import {
  loadScenario,
  newScenario,
  saveScenario,
  scenarioFor,
  targetSteps,
} from "../../devnet/scenario_journal.ts";
import { progressLine } from "../../devnet/scenario.ts";

Deno.test("the scenario journal round-trips through its file and a missing file means a new scenario", async () => {
  const dir = await Deno.makeTempDir();
  try {
    assertEquals(await loadScenario(dir), null);
    const s = {
      ...newScenario(5, true),
      phase: "after" as const,
      forge_from_height: 61,
      forge_claim: "ab".repeat(32),
    };
    await saveScenario(dir, s);
    assertEquals(await loadScenario(dir), s);
    assertEquals(
      Deno.readTextFileSync(`${dir}/scenario.json`),
      `{"after":2,"forge":true,"forge_claim":"${
        "ab".repeat(32)
      }","forge_from_height":61,"phase":"after","steps":5}\n`,
    );
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["scenario.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a malformed scenario journal is refused with invalid_value and left as it is", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (
      const text of [
        "{}",
        '{"after":2,"forge":true,"forge_claim":null,"forge_from_height":null,"phase":"later","steps":5}',
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

Deno.test("the sponsor is told N settled steps for the honest phase, N+1 with the forger and N+2 after it", () => {
  const s = newScenario(5, true);
  assertEquals(s.phase, "cohort"); // a new scenario admits a cohort first
  assertEquals(["cohort", "honest", "forge", "after"].map((p) => targetSteps(s, p as never)), [0, 5, 6, 7]);
  assertEquals(targetSteps(newScenario(3, false), "after"), 3);
});

Deno.test("a cohort of N steps is forged before its last two (its first when N < 3) and every step settles", () => {
  const split = (n: number, forge: boolean) => {
    const s = scenarioFor(n, forge);
    return [s.steps, s.after, targetSteps(s, "forge"), targetSteps(s, "evaluate")];
  };
  assertEquals(split(5, true), [3, 2, 4, 5]);
  assertEquals(split(3, true), [1, 2, 2, 3]);
  assertEquals(split(2, true), [0, 2, 1, 2]);
  assertEquals(split(1, true), [0, 1, 1, 1]);
  assertEquals(split(4, false), [4, 0, 4, 4]);
  assertEquals(scenarioFor(5, true).phase, "cohort");
});

Deno.test("progress lines show the sponsor's step, phase, height and loss and the referee's challenges only", () => {
  const s = { ...newScenario(5, true), phase: "honest" as const };
  const sponsor = `{"attempt":1,"event":"step","height":13,"loss":"${
    toHexFloat(8.38888)
  }","phase":"claim","step":2}`;
  assertEquals(progressLine("sponsor", sponsor, s), "[honest] step 3 claim height=13 loss=8.3889");
  assertEquals(
    progressLine(
      "referee",
      '{"claim_id":"6183678ad303991b","detail":"fraud (optimizer update)","event":"challenge","stage":1}',
      s,
    ),
    "[honest] referee challenge 6183678ad303 stage 1: fraud (optimizer update)",
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
