/**
 * Placement of components on workers by capacity (PROTOCOL §10.3). Stage 0 takes `embed` and `norm` and
 * then blocks in numeric order while they fit; each later worker takes the following blocks while they fit.
 * A worker that cannot take even one block (or stage 0 that cannot hold embed and norm), or running out of
 * workers before the last block, is `placement_failed`. Workers left over are not used.
 *
 * @example
 * ```ts
 * import { place } from "./placement.ts";
 * import { PRESETS } from "./config.ts";
 * place(PRESETS.devnet, [1_000_000, 1_000_000]); // [["embed","norm","block_000","block_001"],["block_002","block_003"]]
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import type { ModelConfig } from "./config.ts";
import { blockName, componentParameters } from "./model.ts";

/** The partition of every stage: component names, stage 0 first. */
export function place(config: ModelConfig, capacities: readonly number[]): string[][] {
  const fail = (message: string) => new ProtocolError("placement_failed", `Cannot place model: ${message}`);
  for (const c of capacities) {
    if (!Number.isSafeInteger(c) || c < 0) throw fail(`capacity ${c} is not a non-negative integer`);
  }
  const stages: string[][] = [];
  let next = 0;
  const blocks = config.num_hidden_layers;
  for (let w = 0; w < capacities.length && next < blocks; w++) {
    let free = capacities[w]!;
    const stage: string[] = [];
    if (w === 0) {
      const head = componentParameters(config, "embed") + componentParameters(config, "norm");
      if (head > free) throw fail(`worker 0 has capacity ${free}, embed and norm need ${head}`);
      stage.push("embed", "norm");
      free -= head;
    }
    while (next < blocks && componentParameters(config, blockName(next)) <= free) {
      free -= componentParameters(config, blockName(next));
      stage.push(blockName(next++));
    }
    if (stage.length === 0) {
      throw fail(
        `worker ${w} has capacity ${capacities[w]}, ${blockName(next)} needs ${
          componentParameters(config, blockName(next))
        }`,
      );
    }
    stages.push(stage);
  }
  if (capacities.length === 0) throw fail("there are no workers");
  if (next < blocks) throw fail(`${blocks - next} blocks are left after ${capacities.length} workers`);
  return stages;
}
