/**
 * `deno task chat --model ROOT`: an interactive greedy chat with a stored model. Each line read from stdin is a
 * user message; the conversation so far is rendered with the model's chat template and the answer streams
 * until `<|im_end|>`. When the prompt would exceed the protocol's 192 tokens the oldest exchanges are dropped
 * (and the user is told). `/reset` starts over, `/exit` or end of input quits.
 */
import { ProtocolError } from "../core/errors.ts";
import type { ChatMessage } from "../text/template_render.ts";
import { encodePrompt } from "../text/conversation.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";
import { DRAFT_HELP, draftChoice, loadSession, streamReply } from "./_model_session.ts";

const HELP = `deno task chat --model ROOT [--objects DIR] [--max-tokens N]
                   [--draft N [--drafter onnx|int8] | --no-draft]

Chat with a stored model (for example SmolLM2 after \`deno task model:import\`), greedy and deterministic.
Type a message and press Enter; the answer streams back. /reset forgets the conversation, /exit (or Ctrl-D)
quits. Prompts are limited to 192 tokens: older exchanges are dropped when a conversation grows past that.

Options:
  --model ROOT       the model manifest's root (printed by model:import)
  --objects DIR      the object store (default .neuroshard/objects)
  --max-tokens N     at most N new tokens per answer (default 256)
${DRAFT_HELP}
  -h, --help         show this help`;

/** Lines of stdin as they arrive. */
async function* lines(): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of Deno.stdin.readable) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, nl).replace(/\r$/, "");
      buffered = buffered.slice(nl + 1);
    }
  }
  buffered += decoder.decode();
  if (buffered.length > 0) yield buffered;
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    model: { type: "string" },
    objects: { type: "string", default: ".neuroshard/objects" },
    "max-tokens": { type: "string", default: "256" },
    "no-draft": { type: "boolean" },
    draft: { type: "string" },
    drafter: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const root = required(values.model, "model");
  const maxTokens = integerOption(values["max-tokens"], "max-tokens", { max: 4096 });
  const draft = draftChoice(values.draft, values["no-draft"], values.drafter);
  const session = await loadSession(values.objects, root, draft?.drafter ?? null);
  const out = new TextEncoder();
  const write = (text: string) => Deno.stdout.writeSync(out.encode(text));
  const eos = session.codec.manifest.special_ids.eos;
  let history: ChatMessage[] = [];
  write("you> ");
  for await (const line of lines()) {
    const content = line.trim();
    if (content === "/exit") break;
    if (content === "/reset" || content === "") {
      if (content === "/reset") history = [];
      write(content === "/reset" ? "(conversation reset)\nyou> " : "you> ");
      continue;
    }
    let prompt: number[] | null = null;
    let messages: ChatMessage[] = [...history, { role: "user", content }];
    while (prompt === null) {
      try {
        prompt = encodePrompt(session.codec, messages);
      } catch (e) {
        const tooLong = e instanceof ProtocolError &&
          /Cannot accept prompt: it is \d+ tokens/.test(e.message);
        if (!tooLong || messages.length < 3) {
          write(`(${e instanceof Error ? e.message : String(e)})\nyou> `);
          break;
        }
        messages = messages.slice(2);
        write("(dropped the oldest exchange to stay within 192 prompt tokens)\n");
      }
    }
    if (prompt === null) continue;
    write("assistant> ");
    const { ids } = streamReply(session, prompt, maxTokens, write, draft?.k);
    const answer = session.codec.decode(ids.filter((id) => id !== eos));
    history = [...messages, { role: "assistant", content: answer }];
    write("\nyou> ");
  }
  write("\n");
}

if (import.meta.main) await runTask("chat", main);
