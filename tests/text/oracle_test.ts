/**
 * Oracle tests: the Python `tokenizers` library must give the same ids as our loaded tokenizer, and Python
 * `jinja2` must render the SmolLM2 template byte-identically to ours. They run in the default suite when pip can
 * install the oracle (see `_oracle.ts`) and are ignored, with the reason printed, otherwise.
 */
import assert from "node:assert/strict";
import { canonical, type JsonObject } from "../../core/canonical.ts";
import { trainBpe } from "../../text/bpe_trainer.ts";
import { checkTemplate, SMOLLM2_TEMPLATE } from "../../text/chat_template.ts";
import { TextCodec } from "../../text/codec.ts";
import { buildCodec, DEVNET_SPECIAL_TOKENS } from "../../text/codec_manifest.ts";
import { renderTemplate } from "../../text/template_render.ts";
import { tokenizerJson } from "../../text/tokenizer_json.ts";
import { oracleSkip, python } from "./_oracle.ts";
import { multilingualText, PROBES } from "./_multilingual.ts";

const ignore = oracleSkip !== null;

const TOKENIZER_SCRIPT = `
import json, sys
from tokenizers import Tokenizer
data = json.load(open(sys.argv[1], encoding="utf-8"))
tok = Tokenizer.from_str(data["tokenizer"])
out = {}
for name, text in data["texts"].items():
    ids = tok.encode(text, add_special_tokens=False).ids
    out[name] = {"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)}
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
`;

const JINJA_SCRIPT = `
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
data = json.load(open(sys.argv[1], encoding="utf-8"))
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, autoescape=False)
out = []
for case in data["cases"]:
    out.append(env.from_string(case["template"]).render(**case["context"]))
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
`;

Deno.test({
  name:
    "Python tokenizers gives our ids on the eight probes and 1 MB of generated text, and every probe round-trips",
  ignore,
  async fn() {
    const tokenizer = tokenizerJson(trainBpe([multilingualText(1, 1_000_000)], 3000));
    const built = buildCodec(tokenizer, SMOLLM2_TEMPLATE, DEVNET_SPECIAL_TOKENS);
    const codec = TextCodec.fromParts(built.manifest as unknown as JsonObject, built.backend, built.root);
    const texts: Record<string, string> = { ...PROBES, generated: multilingualText(2, 1_000_000) };
    texts.specials = "<|im_start|>user\n" + PROBES.mixed_direction! + "<|im_end|>\n<|endoftext|>";
    const theirs = await python(TOKENIZER_SCRIPT, { tokenizer: canonical(tokenizer), texts }) as Record<
      string,
      { ids: number[]; decoded: string }
    >;
    assert.equal(Object.keys(PROBES).length, 8);
    for (const [name, text] of Object.entries(texts)) {
      const ours = codec.encode(text);
      assert.deepEqual(ours, theirs[name]!.ids, `ids differ on ${name}`);
      assert.equal(codec.decode(ours), text, `our round trip of ${name}`);
      assert.equal(theirs[name]!.decoded, text, `Python round trip of ${name}`);
    }
    assert.ok(theirs.generated!.ids.length > 100_000);
  },
});

Deno.test({
  name: "Python jinja2 renders the SmolLM2 template byte-identically to ours, including hostile content",
  ignore,
  async fn() {
    const tokens = {
      bos_token: "<|im_start|>",
      eos_token: "<|im_end|>",
      pad_token: "<|im_end|>",
      unk_token: "<|endoftext|>",
    };
    const hostile =
      "{{ 7 * 7 }} {% raw %}{% endraw %} {# c #} <script>alert('x')</script> &amp; \\n \"q\" 'q' ${x} " +
      "{{ messages.__class__ }} \u00a0 🙂 \r\n  trailing  ";
    const conversations = [
      [{ role: "user", content: "What is 2+3?" }],
      [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }, {
        role: "assistant",
        content: "Hello!",
      }],
      [{ role: "user", content: hostile }, { role: "assistant", content: hostile }, {
        role: "user",
        content: "\n",
      }],
      [{ role: "system", content: hostile }, { role: "user", content: "" }],
    ];
    const extra = "{{ bos_token }}\n{% for message in messages %}\n  {% if message['role'] == 'user' %}\n" +
      "U{{ loop.index }}/{{ loop.length }}: {{ message['content'] }}\n  {% elif loop.last %}\nlast {{ message.content ~ '!' }}\n" +
      "  {% else %}\n{{ loop.index0 }} {{ loop.first }}\n  {% endif %}\n{% endfor %}\n" +
      "{% if not add_generation_prompt or (messages[0]['role'] != 'user') %}\nend{{ eos_token }} {{ none }} {{ 1 == true }}\n{% endif %}";
    const cases = [];
    for (const template of [SMOLLM2_TEMPLATE, extra]) {
      for (const messages of conversations) {
        for (const add_generation_prompt of [false, true]) {
          cases.push({ template, context: { messages, add_generation_prompt, ...tokens } });
        }
      }
    }
    const theirs = await python(JINJA_SCRIPT, { cases }) as string[];
    cases.forEach((c, i) => {
      const ours = renderTemplate(checkTemplate(c.template), c.context);
      assert.equal(ours, theirs[i], `case ${i}`);
    });
  },
});
