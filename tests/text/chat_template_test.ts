import assert from "node:assert/strict";
import nunjucks from "nunjucks";
import { ProtocolError } from "../../core/errors.ts";
import { MAX_RENDERED_BYTES, MAX_TEMPLATE_BYTES } from "../../core/limits.ts";
import { checkTemplate, SMOLLM2_TEMPLATE } from "../../text/chat_template.ts";
import {
  renderChunks,
  renderTemplate,
  type TemplateContext,
  utf8Length,
} from "../../text/template_render.ts";

const TOKENS = {
  bos_token: "<|im_start|>",
  eos_token: "<|im_end|>",
  pad_token: "<|im_end|>",
  unk_token: "<|endoftext|>",
};
function ctx(messages: { role: string; content: string }[], add_generation_prompt: boolean): TemplateContext {
  return { messages, add_generation_prompt, ...TOKENS };
}
const SYSTEM =
  "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";

function rejects(source: string, code: string, where: RegExp): void {
  assert.throws(
    () => checkTemplate(source),
    (e) => e instanceof ProtocolError && e.code === code && where.test(e.message),
  );
}

Deno.test("the SmolLM2 template renders ChatML with the default system prompt when there is none", () => {
  const t = checkTemplate(SMOLLM2_TEMPLATE);
  assert.equal(
    renderTemplate(t, ctx([{ role: "user", content: "Hi <b>&amp;" }], true)),
    SYSTEM + "<|im_start|>user\nHi <b>&amp;<|im_end|>\n<|im_start|>assistant\n",
  );
  assert.equal(
    renderTemplate(
      t,
      ctx([{ role: "system", content: "Be brief." }, { role: "user", content: "2+2?" }], false),
    ),
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n",
  );
});

Deno.test("our renderer equals nunjucks with autoescape off, trimBlocks and lstripBlocks on allowed templates", () => {
  const env = new nunjucks.Environment(null, { autoescape: false, trimBlocks: true, lstripBlocks: true });
  const templates = [
    SMOLLM2_TEMPLATE,
    "{{ bos_token }}\n{% for message in messages %}\n  {% if message['role'] == 'user' %}\nU{{ loop.index }}/{{ loop.length }}: {{ message['content'] }}\n  {% elif loop.last %}\nlast {{ message.content ~ '!' }}\n  {% else %}\n{{ loop.index0 }}\n  {% endif %}\n{% endfor %}\n{% if not add_generation_prompt or (messages[0]['role'] != 'user') %}\nend{{ eos_token }}\n{% endif %}",
  ];
  const convs = [
    [{ role: "user", content: "a" }],
    [{ role: "system", content: "s" }, { role: "user", content: "q" }, { role: "assistant", content: "<a>" }],
  ];
  for (const source of templates) {
    for (const messages of convs) {
      for (const gen of [true, false]) {
        const c = ctx(messages, gen);
        assert.equal(renderTemplate(checkTemplate(source), c), env.renderString(source, c));
      }
    }
  }
});

Deno.test("booleans and none print as Jinja2 does and comparisons follow Python", () => {
  const t = checkTemplate(
    "{% for message in messages %}{{ loop.first }},{{ loop.last }};{% endfor %}{{ none }}|{{ 2 < 10 }}|{{ 'b' > 'a' }}|{{ 1 == true }}",
  );
  assert.equal(
    renderTemplate(t, ctx([{ role: "user", content: "" }, { role: "assistant", content: "" }], false)),
    "True,False;False,True;None|True|True|True",
  );
});

Deno.test("each forbidden construct is rejected with invalid_template and its line and column", () => {
  rejects("{{ bos_token() }}", "invalid_template", /FunCall at line 1, column \d+/);
  rejects("x\n{{ bos_token | upper }}", "invalid_template", /Filter at line 2, column \d+/);
  rejects(
    "{% for message in messages %}\n{% for message in messages %}{% endfor %}{% endfor %}",
    "invalid_template",
    /a nested loop at line 2, column 4/,
  );
  rejects("{% set x = 1 %}", "invalid_template", /the statement Set at line 1, column 4/);
  rejects("{% include 'other.html' %}", "invalid_template", /the statement Include at line 1/);
  rejects("{% macro m() %}x{% endmacro %}", "invalid_template", /the statement Macro at line 1/);
  rejects(
    "{% for message in messages %}{{ message.__class__ }}{% endfor %}",
    "invalid_template",
    /the message field "__class__" at line 1/,
  );
  rejects("{{ bos_token.constructor.constructor('return Deno')() }}", "invalid_template", /FunCall/);
  rejects("{{ eos_token.length }}", "invalid_template", /the lookup "length" on name eos_token/);
  rejects("  {{ messages }}", "invalid_template", /the bare name messages at line 1, column 6/);
  rejects("{{ messages[0] }}", "invalid_template", /the lookup 0 on name messages/);
  rejects(
    "{% for message in messages %}{{ loop.cycle('a', 'b') }}{% endfor %}",
    "invalid_template",
    /FunCall at line 1/,
  );
  rejects(
    "{% for message in messages %}{{ loop.cycle }}{% endfor %}",
    "invalid_template",
    /loop field "cycle"/,
  );
  rejects("{% for message in messages %}{{ message }}{% endfor %}", "invalid_template", /bare name message/);
  rejects("{{ loop.index }}", "invalid_template", /loop outside the loop/);
  rejects("{% for m in messages %}{% endfor %}", "invalid_template", /loop variable other than message/);
  rejects("{% for message in messages %}{% else %}x{% endfor %}", "invalid_template", /else branch/);
  rejects("{{ 1.5 }}", "invalid_template", /the constant 1.5/);
  rejects("{{ 'a' if true else 'b' }}", "invalid_template", /InlineIf/);
  rejects("{{ Deno }}", "invalid_template", /the bare name Deno/);
  rejects("{% if %}", "invalid_template", /Cannot parse chat template/);
});

Deno.test("at most 32 concatenations are accepted and the template is at most 64 KiB", () => {
  const join = (n: number) => "{{ " + Array.from({ length: n + 1 }, () => "bos_token").join(" + ") + " }}";
  assert.equal(renderTemplate(checkTemplate(join(32)), ctx([], false)), "<|im_start|>".repeat(33));
  rejects(join(33), "invalid_template", /concatenation number 33 \(at most 32\) at line 1/);
  assert.doesNotThrow(() => checkTemplate("x".repeat(MAX_TEMPLATE_BYTES)));
  rejects("x".repeat(MAX_TEMPLATE_BYTES + 1), "too_large", /65537 bytes exceeds the bound of 65536/);
});

Deno.test("an allowed template that would expand past 512 KiB stops at the cap while streaming", () => {
  const t = checkTemplate(
    "{% for message in messages %}{{ message['content'] + message['content'] + message['content'] }}{% endfor %}",
  );
  const messages = Array.from({ length: 128 }, () => ({ role: "user", content: "é".repeat(1000) }));
  let total = 0;
  let chunks = 0;
  assert.throws(
    () => {
      for (const chunk of renderChunks(t, ctx(messages, false))) {
        total += utf8Length(chunk);
        chunks++;
      }
    },
    (e) =>
      e instanceof ProtocolError && e.code === "too_large" && e.message.includes(String(MAX_RENDERED_BYTES)),
  );
  assert.equal(chunks, Math.floor(MAX_RENDERED_BYTES / 6000));
  assert.equal(total, chunks * 6000);
  assert.ok(total <= MAX_RENDERED_BYTES);
});

Deno.test("a constant index past the end of the conversation is a render error", () => {
  const t = checkTemplate("{{ messages[3]['role'] }}");
  assert.throws(
    () => renderTemplate(t, ctx([{ role: "user", content: "x" }], false)),
    (e) =>
      e instanceof ProtocolError && e.code === "invalid_template" &&
      /messages\[3\] with 1 messages/.test(e.message),
  );
});

Deno.test("utf8Length counts bytes of BMP, astral and lone surrogate characters", () => {
  for (const s of ["", "abc", "é", "中文", "🙂x", "a\ud800b"]) {
    assert.equal(utf8Length(s), new TextEncoder().encode(s).length);
  }
});
