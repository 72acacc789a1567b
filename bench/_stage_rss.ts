/**
 * Run by `stage_bench.ts` as its own process, so each figure is one process's peak resident memory (Linux
 * VmHWM) with nothing else in it.
 *
 * `prepare GGUF DIR`: loads SmolLM2, runs one 3-stage step (B=1, T=64) and writes into DIR what a worker of
 * each stage receives: its components' files and its phase inputs (`stage<i>/`), plus `expect.json` with the
 * committed roots.
 * `run DIR STAGE MODE`: a worker's stage from those files, through every phase, printing one JSON line with
 * the peak MB and whether every output's root matched. MODE `saving` is `openStage` (the worker's path);
 * `copying` is the same phases written as plain calls of the pure stage functions with no memory savings
 * (gradients as separate buffers, a separate updated copy, then its serialized bytes): what `openStage` did
 * before the savings, kept here as the peer the saving path is measured against.
 */
import { sha256Hex } from "../core/digest.ts";
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { batchArrays } from "../kernels/batch.ts";
import { headDim } from "../kernels/config.ts";
import { headForwardBackward } from "../kernels/head.ts";
import { buildManifest, componentFiles, readComponent } from "../kernels/manifest.ts";
import { componentParameters } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { rotaryTables } from "../kernels/rotary.ts";
import { readValue, type Tensors, writeSafetensors, writeValue } from "../kernels/safetensors.ts";
import { applyUpdate, stageBackward, stageForward } from "../kernels/stage.ts";
import { openStage } from "../kernels/stage_io.ts";
import { trainStep } from "../kernels/step.ts";
import type { ModelConfig } from "../kernels/config.ts";

function peakMb(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(Deno.readTextFileSync("/proc/self/status"));
  return m ? Number(m[1]) / 1024 : NaN;
}

const T = 64;
const [command, ...args] = Deno.args;

if (command === "prepare") {
  const [gguf, dir] = args as [string, string];
  const model = modelFromGguf(readGguf(await Deno.readFile(gguf)));
  const c = model.config;
  const block = componentParameters(c, "block_000");
  const stage0 = componentParameters(c, "embed") + componentParameters(c, "norm") + 10 * block;
  const partitions = place(c, [stage0, 10 * block, 10 * block]);
  const files = componentFiles(model);
  const roots = Object.fromEntries(Object.entries(files).map(([n, b]) => [n, sha256Hex(b)]));
  const manifest = buildManifest(c, roots, { origin: { format: "gguf" }, tokenizer_root: "0".repeat(64) });
  const ids = Array.from({ length: T }, (_, t) => (t * 977 + 13) % c.vocab_size);
  const batch = { input_ids: [ids], labels: [[...ids.slice(1), -100]] };
  const out = trainStep({ model, manifest, batch, partitions, learningRate: 1e-4, clip: 1, step: 0 });
  for (const [i, trace] of out.traces.entries()) {
    const at = `${dir}/stage${i}`;
    await Deno.mkdir(at, { recursive: true });
    for (const name of trace.partition) await Deno.writeFile(`${at}/${name}.safetensors`, files[name]!);
    const inputs: Record<string, string | undefined> = {
      input: i === 0 ? undefined : trace.input,
      head_input: trace.head_input,
      gradient_out: trace.gradient_out,
    };
    for (const [what, root] of Object.entries(inputs)) {
      if (root !== undefined) await Deno.writeFile(`${at}/${what}.safetensors`, out.objects.get(root)!);
    }
  }
  await Deno.writeTextFile(
    `${dir}/expect.json`,
    JSON.stringify({ config: c, batch, scale: out.scale, traces: out.traces }),
  );
} else if (command === "run") {
  const [dir, stageText, mode] = args as [string, string, "saving" | "copying"];
  const i = Number(stageText);
  const expect = JSON.parse(await Deno.readTextFile(`${dir}/expect.json`));
  const trace = expect.traces[i];
  const config = expect.config as ModelConfig;
  const at = `${dir}/stage${i}`;
  const read = (what: string) => Deno.readFileSync(`${at}/${what}.safetensors`);
  const components: Record<string, Uint8Array> = {};
  for (const name of trace.partition as string[]) components[name] = read(name);
  const setup = { config, partition: trace.partition as string[], components, batch: expect.batch };
  const base = peakMb();
  const t0 = performance.now();
  const got = mode === "saving"
    ? savingStage(setup, i === 0, read, expect.scale)
    : copyingStage(setup, i === 0, read, expect.scale);
  const seconds = (performance.now() - t0) / 1000;
  const want = [trace.output, trace.gradient_in, ...trace.partition.map((n: string) => trace.components[n])];
  if (i === 0) want.push(trace.head_gradient);
  const same = JSON.stringify(got.roots.sort()) === JSON.stringify(want.filter((x) => x !== null).sort());
  console.log(JSON.stringify({ stage: i, mode, base, peak: peakMb(), seconds, same }));
} else {
  console.error("usage: _stage_rss.ts prepare GGUF DIR | run DIR STAGE saving|copying");
  Deno.exit(2);
}

interface Setup {
  config: ModelConfig;
  partition: string[];
  components: Record<string, Uint8Array>;
  batch: { input_ids: number[][]; labels: number[][] };
}

/** The worker's path: `openStage`, phase by phase; the roots of everything it outputs. */
function savingStage(
  setup: Setup,
  head0: boolean,
  read: (what: string) => Uint8Array,
  scale: number,
): { roots: string[] } {
  const s = openStage(setup);
  const roots = [sha256Hex(s.forward(head0 ? null : read("input")))];
  if (head0) roots.push(sha256Hex(s.head(read("head_input")).headGradient));
  const back = s.backward(read("gradient_out"));
  if (back.gradientIn) roots.push(sha256Hex(back.gradientIn));
  setup.components = {}; // as the worker's stage cache, which drops the bytes once the stage is open
  const files = s.update(1e-4, scale);
  for (const name of setup.partition) roots.push(sha256Hex(files[name]!));
  return { roots };
}

/** The same phases with no memory savings (see the module comment). */
function copyingStage(
  setup: Setup,
  head0: boolean,
  read: (what: string) => Uint8Array,
  scale: number,
): { roots: string[] } {
  const c = setup.config;
  const components: Record<string, Tensors> = {};
  for (const name of setup.partition) components[name] = readComponent(c, name, setup.components[name]!);
  setup.components = {};
  const { B, T, ids, labels } = batchArrays(setup.batch as never);
  const shape = { config: c, B, T, ids, tables: rotaryTables(T, headDim(c), c.rope_theta) };
  const act = [B, T, c.hidden_size];
  const fwd = stageForward(
    shape,
    setup.partition,
    components,
    head0 ? null : readValue(read("input"), act).data,
  );
  const roots = [sha256Hex(writeValue({ shape: act, data: fwd.output }))];
  let head = null;
  if (head0) {
    const h = readValue(read("head_input"), act).data;
    head = headForwardBackward(h, labels, components.norm!, components.embed!, c, B * T);
    roots.push(sha256Hex(writeValue({ shape: act, data: head.dHidden })));
  }
  const r = stageBackward(
    shape,
    setup.partition,
    components,
    fwd,
    readValue(read("gradient_out"), act).data,
    head,
  );
  if (r.gradientIn) roots.push(sha256Hex(writeValue({ shape: act, data: r.gradientIn })));
  const updated = applyUpdate(setup.partition, components, r.grads, 1e-4, scale);
  const files = Object.fromEntries(setup.partition.map((n) => [n, writeSafetensors(updated[n]!)]));
  for (const name of setup.partition) roots.push(sha256Hex(files[name]!));
  return { roots };
}
