/**
 * PyTorch parity (slow suite, `NEURO_SLOW=1`): transformers' LlamaForCausalLM loaded from our safetensors
 * components must give our logits, loss and every gradient within 1e-4 relative (max |ours − torch| over
 * max |torch|, per tensor). The test builds its own virtual environment under `.cache/venv-torch` with pip
 * (torch, transformers, safetensors, numpy); when Python or the registry is unavailable it is ignored with
 * the reason printed.
 */
import assert from "node:assert/strict";
import { batchArrays } from "../../kernels/batch.ts";
import { headDim, type ModelConfig } from "../../kernels/config.ts";
import { headForwardBackward, headLogits } from "../../kernels/head.ts";
import { componentFiles } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { rotaryTables } from "../../kernels/rotary.ts";
import { writeSafetensors, writeValue } from "../../kernels/safetensors.ts";
import { stageBackward, stageForward } from "../../kernels/stage.ts";
import { rng } from "./_gradcheck.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
// How much larger than the initialisation the weights are (PARITY_SCALE overrides, for exploring). At 3 the
// network is well conditioned and both float32 runs are within ~2e-6 of float64; at 10 it is so sharp that
// float32 rounding alone moves gradients by ~5e-4 (ours, summing strictly in order) and ~1e-4 (torch, with
// blocked sums), so a 1e-4 bound would measure conditioning, not correctness.
const SCALE = Number(Deno.env.get("PARITY_SCALE") ?? 3);
const ROOT = new URL("../../", import.meta.url).pathname;
const VENV = `${ROOT}.cache/venv-torch`;
const PYTHON = `${VENV}/bin/python`;
const SCRIPT = new URL("./oracle/torch_parity.py", import.meta.url).pathname;

async function run(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const r = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
    const out = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
    return { ok: r.success, out };
  } catch (e) {
    return { ok: false, out: (e as Error).message };
  }
}

/** Makes sure the venv can import torch and transformers; returns why not, or null. */
async function ensureVenv(): Promise<string | null> {
  const probe = ["-c", "import torch, transformers, safetensors"];
  if ((await run(PYTHON, probe)).ok) return null;
  console.log(`torch parity: building ${VENV} with pip (torch, transformers, safetensors, numpy)`);
  const venv = await run("python3", ["-m", "venv", VENV]);
  if (!venv.ok) return `python3 -m venv failed: ${venv.out.slice(-300)}`;
  const pip = await run(`${VENV}/bin/pip`, [
    "install",
    "--quiet",
    "--disable-pip-version-check",
    "torch",
    "transformers",
    "safetensors",
    "numpy",
  ]);
  if (!pip.ok) return `pip install failed: ${pip.out.slice(-500)}`;
  const again = await run(PYTHON, probe);
  return again.ok ? null : `torch does not import: ${again.out.slice(-300)}`;
}

const reason = SLOW ? await ensureVenv() : "set NEURO_SLOW=1 to run";
if (SLOW && reason) console.log(`torch parity ignored: ${reason}`);

const CONFIG: ModelConfig = {
  vocab_size: 64,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 32,
};

Deno.test({
  name: "torch parity: logits, loss and every gradient match LlamaForCausalLM within 1e-4 relative",
  ignore: reason !== null,
  async fn() {
    const model = initModel(CONFIG, 17);
    // Larger weights than the initialisation so attention and the MLP are far from linear (see SCALE).
    const next = rng(17);
    for (const comp of Object.values(model.components)) {
      for (const t of Object.values(comp)) {
        t.data.forEach((v, i) => t.data[i] = Math.fround(v * SCALE + (next() - 0.5) * 0.2));
      }
    }
    const B = 2, T = 12;
    const ids = Array.from({ length: B }, () => Array.from({ length: T }, () => Math.floor(next() * 64)));
    const batch = { input_ids: ids, labels: ids.map((r) => [...r.slice(1), -100]) };
    batch.labels[1]![3] = -100;
    const arrays = batchArrays(batch);
    const shape = {
      config: CONFIG,
      B,
      T,
      ids: arrays.ids,
      tables: rotaryTables(T, headDim(CONFIG), CONFIG.rope_theta),
    };
    const partition = ["embed", "norm", "block_000", "block_001"];
    const f = stageForward(shape, partition, model.components, null);
    const head = headForwardBackward(
      f.output,
      arrays.labels,
      model.components.norm!,
      model.components.embed!,
      CONFIG,
      B * T,
    );
    const { grads } = stageBackward(shape, partition, model.components, f, head.dHidden, head);
    const logits = headLogits(f.output, model.components.norm!, model.components.embed!, CONFIG, B * T);

    const dir = await Deno.makeTempDir({ prefix: "torch-parity-" });
    try {
      const text = (name: string, value: unknown) =>
        Deno.writeTextFile(`${dir}/${name}`, JSON.stringify(value));
      await text("config.json", CONFIG);
      await text("batch.json", batch);
      await text("loss.json", { loss: head.loss });
      for (const [name, bytes] of Object.entries(componentFiles(model))) {
        await Deno.writeFile(`${dir}/${name}.safetensors`, bytes);
      }
      for (const name of partition) {
        await Deno.writeFile(`${dir}/grad_${name}.safetensors`, writeSafetensors(grads[name]!));
      }
      await Deno.writeFile(
        `${dir}/logits.safetensors`,
        writeValue({ shape: [B, T, CONFIG.vocab_size], data: logits }),
      );
      const r = await run(PYTHON, [SCRIPT, dir]);
      assert.ok(r.ok, r.out.slice(-2000));
      const report = JSON.parse(r.out.trim().split("\n").pop()!) as {
        tensors: Record<string, number>;
        float64: Record<string, [number, number]>;
        worst: number;
        torch: string;
      };
      console.log(`torch ${report.torch}: worst relative error ${report.worst.toExponential(2)}`);
      for (const [n, e] of Object.entries(report.tensors)) {
        const [t32, ours] = report.float64[n] ?? [NaN, NaN];
        console.log(
          `  ${n}: ${e.toExponential(2)} (vs float64: torch ${t32.toExponential(2)}, ours ${
            ours.toExponential(2)
          })`,
        );
      }
      assert.equal(Object.keys(report.tensors).length, 2 + 2 + 9 * 2);
      for (const [name, err] of Object.entries(report.tensors)) {
        assert.ok(err <= 1e-4, `${name}: relative error ${err}`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
