/**
 * The real model on the network (issue 20). With `NEURO_BENCH_FULL=1` it runs the whole SmolLM2 devnet
 * scenario once (`deno task devnet --model smollm2 --json` in a fresh directory under `.cache/`: about 40
 * minutes and 11 GB of memory on two cores) and prints its table — step time, per-stage replay, the forged
 * stage's dispute bytes, transactions, publish and resolve time, growth bytes, atoms issued, agreement, the
 * answer, the cohorts' votes, the gate and the paid answer — beside the reference's published figures; without it that bench is reported ignored. Always (when
 * `deno task model:fetch-smollm2` has run; skipped with a message otherwise), the units of work the scenario
 * is made of are timed in this process as ratios against the full-model step on three stages: the referee's
 * replay of the 12-block last stage, and the growth check from the parent's last block alone.
 * Run: `deno bench -A bench/smollm2_devnet_bench.ts`.
 */
import { sha256Hex } from "../core/digest.ts";
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { growManifest } from "../kernels/growth.ts";
import { buildManifest, componentFiles, manifestRoot } from "../kernels/manifest.ts";
import { blockName } from "../kernels/model.ts";
import { replayStage } from "../kernels/referee.ts";
import { trainStep } from "../kernels/step.ts";
import { formatSmollm2Report, type Smollm2Report } from "../devnet/smollm2_report.ts";
import { SMOLLM2_GROWTH_BLOCKS, smollm2Placement } from "../genesis/devnet/smollm2_contents.ts";
import pin from "../genesis/pins/smollm2_genesis.json" with { type: "json" };

const ROOT = new URL("../", import.meta.url).pathname;
const PATH = `${ROOT}.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf`;
const present = await Deno.stat(PATH).then(() => true, () => false);
const FULL = Deno.env.get("NEURO_BENCH_FULL") === "1";
if (!present) console.log(`skipped: ${PATH} is missing (run deno task model:fetch-smollm2)`);

Deno.bench({
  name: "SmolLM2 devnet scenario, end to end (NEURO_BENCH_FULL=1)",
  ignore: !present || !FULL,
  n: 1,
  warmup: 0,
  async fn() {
    const tmp = await Deno.makeTempDir({ dir: `${ROOT}.cache` });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["task", "devnet", "--model", "smollm2", "--json", "--dir", `${tmp}/net`, "--gguf", PATH],
        cwd: ROOT,
        stdout: "piped",
        stderr: "null",
      }).output();
      const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
      if (out.code !== 0) throw new Error(`the devnet exited with ${out.code}`);
      console.log(formatSmollm2Report(JSON.parse(lines[lines.length - 1]!) as Smollm2Report));
    } finally {
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  },
});

if (present) {
  const model = modelFromGguf(readGguf(await Deno.readFile(PATH)));
  const files = componentFiles(model);
  const roots = Object.fromEntries(Object.entries(files).map(([n, b]) => [n, sha256Hex(b)]));
  const parent = buildManifest(model.config, roots, {
    origin: { format: "gguf" },
    tokenizer_root: "0".repeat(64),
  });
  const parentRoot = manifestRoot(parent);
  const batch = pin.training.batches[0]! as { input_ids: number[][]; labels: number[][] };
  const partitions = smollm2Placement(model.config, 3);
  const args = { model, manifest: parent, batch, learningRate: 2 ** -6, clip: 1, step: 0, partitions };
  const step = trainStep(args);
  const objects = new Map(step.objects);
  for (const [n, b] of Object.entries(files)) objects.set(roots[n]!, b);
  const last = files[blockName(model.config.num_hidden_layers - 1)]!;

  Deno.bench({
    name: "full-model step on three 48M stages (2 windows of 128)",
    group: "smollm2",
    baseline: true,
    n: 2,
    warmup: 0,
    fn: () => void trainStep(args),
  });
  Deno.bench({
    name: "referee replay of the last stage (12 blocks), as inside resolve",
    group: "smollm2",
    n: 2,
    warmup: 0,
    fn: () => {
      const v = replayStage({
        parent,
        batch,
        stage: 2,
        trace: step.traces[2]!,
        fetch: (r) => objects.get(r),
      });
      if (v.verdict !== "match") throw new Error(`replay ${JSON.stringify(v)}`);
    },
  });
  Deno.bench({
    name:
      `growth by ${SMOLLM2_GROWTH_BLOCKS} identity blocks checked from the parent's last block (${last.length} bytes)`,
    group: "smollm2",
    n: 5,
    warmup: 1,
    fn: () => void growManifest(parent, parentRoot, last, SMOLLM2_GROWTH_BLOCKS),
  });
}
