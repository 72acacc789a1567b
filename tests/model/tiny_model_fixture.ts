/**
 * The tiny Llama of the kernel tests as a complete GGUF (weights, a 4-token byte-level tokenizer and a chat
 * template), and helpers to run tasks on it.
 */
import { writeGguf, type WValue } from "../kernels/gguf_writer.ts";
import { ggufTensors, metadata } from "../kernels/gguf_tiny_llama.ts";
import { ROOT } from "./smollm2_file.ts";

const strings = (xs: string[]): WValue => ({ t: 9, item: 8, v: xs.map((v) => ({ t: 8, v })) });
const ints = (xs: number[]): WValue => ({ t: 9, item: 5, v: xs.map((v) => ({ t: 5, v })) });

/** The tiny llama of the kernel tests with a 4-token byte-level tokenizer and a chat template. */
export function tinyModel(): Uint8Array {
  const tokenizer: [string, WValue][] = [
    ["tokenizer.ggml.model", { t: 8, v: "gpt2" }],
    ["tokenizer.ggml.pre", { t: 8, v: "smollm" }],
    ["tokenizer.ggml.tokens", strings(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a"])],
    ["tokenizer.ggml.token_type", ints([3, 3, 3, 1])],
    ["tokenizer.ggml.merges", strings([])],
    ["tokenizer.ggml.bos_token_id", { t: 4, v: 1 }],
    ["tokenizer.ggml.eos_token_id", { t: 4, v: 2 }],
    ["tokenizer.ggml.unknown_token_id", { t: 4, v: 0 }],
    ["tokenizer.chat_template", {
      t: 8,
      v: "{% for message in messages %}{{ '<|im_start|>' + message['content'] + '<|im_end|>' }}{% endfor %}",
    }],
  ];
  return writeGguf({ metadata: [...metadata(), ...tokenizer], tensors: ggufTensors() });
}

/** The `--allow-ffi` flag of `deno task generate` (and `chat`), read from deno.json: the onnxruntime drafter's. */
export const TASK_FFI: readonly string[] = [
  /--allow-ffi=\S+/.exec(JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).tasks.generate)![0],
];

/**
 * Runs a task file under `tasks/` with read and write permissions and `permissions` besides; returns its exit
 * code and output.
 */
export async function runTaskFile(
  file: string,
  args: string[],
  stdin?: string,
  permissions: readonly string[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", ...permissions, `tasks/${file}`, ...args],
    cwd: ROOT,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

/** Runs `fn` with a fresh temporary folder that is removed afterwards. */
export async function tempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "neuroshard-model-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The model_root and codec_root lines printed by model:import. */
export function importedRoots(stdout: string): { model: string; codec: string } {
  const m = /^model_root ([0-9a-f]{64})\ncodec_root ([0-9a-f]{64})\n$/.exec(stdout);
  if (!m) throw new Error(`unexpected model:import output: ${stdout}`);
  return { model: m[1]!, codec: m[2]! };
}
