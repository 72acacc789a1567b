/**
 * `deno task generate --model ROOT --prompt TEXT`: one greedy answer from a stored model, the prompt sent as a
 * single user message through the model's chat template, the answer streamed to stdout until `<|im_end|>`.
 */
import { encodePrompt } from "../text/conversation.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";
import { DRAFT_HELP, draftChoice, loadSession, progress, streamReply } from "./_model_session.ts";

const HELP = `deno task generate --model ROOT --prompt TEXT [--objects DIR] [--max-tokens N]
                   [--draft N [--drafter onnx|int8] | --no-draft]

Answer one prompt greedily with a stored model (for example SmolLM2 after \`deno task model:import\`): the
prompt is one user message rendered with the model's chat template (its default system prompt included),
and the answer streams to stdout until the end-of-turn token or --max-tokens.

Options:
  --model ROOT       the model manifest's root (printed by model:import)
  --prompt TEXT      the user message
  --objects DIR      the object store (default .neuroshard/objects)
  --max-tokens N     at most N new tokens (default 128)
${DRAFT_HELP}
  -h, --help         show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    model: { type: "string" },
    prompt: { type: "string" },
    objects: { type: "string", default: ".neuroshard/objects" },
    "max-tokens": { type: "string", default: "128" },
    "no-draft": { type: "boolean" },
    draft: { type: "string" },
    drafter: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const root = required(values.model, "model");
  const prompt = required(values.prompt, "prompt");
  const maxTokens = integerOption(values["max-tokens"], "max-tokens", { max: 4096 });
  const draft = draftChoice(values.draft, values["no-draft"], values.drafter);
  const session = await loadSession(values.objects, root, draft?.drafter ?? null);
  const ids = encodePrompt(session.codec, [{ role: "user", content: prompt }]);
  const out = new TextEncoder();
  const t0 = performance.now();
  const { ids: answer, stats } = streamReply(
    session,
    ids,
    maxTokens,
    (text) => Deno.stdout.writeSync(out.encode(text)),
    draft?.k,
  );
  Deno.stdout.writeSync(out.encode("\n"));
  const seconds = (performance.now() - t0) / 1000;
  const rate = stats.drafted === 0 ? "" : `, ${stats.accepted}/${stats.drafted} drafted tokens accepted`;
  progress(`${answer.length} tokens in ${seconds.toFixed(1)} s (${stats.rounds + 1} passes${rate})\n`);
}

if (import.meta.main) await runTask("generate", main);
