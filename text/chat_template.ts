/**
 * Bounded chat templates (PROTOCOL §11). A template is parsed with the nunjucks parser (trimmed blocks and
 * stripped block indentation) and its syntax tree is walked with an allowlist before anything renders:
 * nunjucks is not a sandbox (a template can reach the `Deno` global), so everything outside the bounded subset
 * is rejected with its line and column. The allowed subset is: text, output, `for message in messages` (one
 * level, no `else`), `if`/`elif`/`else`, the names `add_generation_prompt bos_token eos_token pad_token
 * unk_token`, `message['role'|'content']`, `messages[N]['role'|'content']` with a constant index,
 * `loop.first|last|index|index0|length`, comparisons (`== != < > <= >=`), `and or not`, parentheses, string
 * concatenation with `+` or `~` (at most 32 in the whole template) and constants (strings, integers, booleans,
 * none).
 *
 * @example
 * ```ts
 * import { checkTemplate, SMOLLM2_TEMPLATE } from "./chat_template.ts";
 * const checked = checkTemplate(SMOLLM2_TEMPLATE); // throws ProtocolError invalid_template otherwise
 * ```
 */
import nunjucks from "nunjucks";
import { ProtocolError } from "../core/errors.ts";
import { MAX_TEMPLATE_BYTES, MAX_TEMPLATE_CONCATENATIONS } from "../core/limits.ts";

/** The SmolLM2-Instruct chat template (ChatML with a default system prompt), as its tokenizer_config.json has it. */
export const SMOLLM2_TEMPLATE =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}" +
  "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}" +
  "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/** A nunjucks syntax-tree node as the parser builds it (only the fields the check and renderer read). */
export interface TemplateNode {
  readonly typename: string;
  readonly lineno: number;
  readonly colno: number;
  readonly [field: string]: unknown;
}

/** A template that passed the check: its source and its syntax tree. */
export interface CheckedTemplate {
  readonly source: string;
  readonly root: TemplateNode;
}

/** The names a template may use bare. */
export const FREE_NAMES = [
  "add_generation_prompt",
  "bos_token",
  "eos_token",
  "pad_token",
  "unk_token",
] as const;
/** The fields of a message a template may read. */
export const MESSAGE_FIELDS = ["role", "content"] as const;
/** The loop variables a template may read. */
export const LOOP_FIELDS = ["first", "last", "index", "index0", "length"] as const;
const COMPARISONS = new Set(["==", "!=", "<", ">", "<=", ">="]);

/** Where a node appears. */
interface Scope {
  inLoop: boolean;
  concatenations: number;
}

/** Parses and checks a template; `too_large` past 64 KiB, `invalid_template` for anything outside the subset. */
export function checkTemplate(source: string): CheckedTemplate {
  const size = new TextEncoder().encode(source).length;
  if (size > MAX_TEMPLATE_BYTES) {
    throw new ProtocolError(
      "too_large",
      `Cannot accept chat template: ${size} bytes exceeds the bound of ${MAX_TEMPLATE_BYTES}`,
    );
  }
  let root: TemplateNode;
  try {
    root = nunjucks.parser.parse(source, undefined, { trimBlocks: true, lstripBlocks: true }) as TemplateNode;
  } catch (e) {
    const message = e instanceof Error ? e.message.replace(/\s+/g, " ").trim() : String(e);
    throw new ProtocolError("invalid_template", `Cannot parse chat template: ${message}`);
  }
  const scope: Scope = { inLoop: false, concatenations: 0 };
  statements(children(root), scope);
  return { source, root };
}

function fail(node: TemplateNode, what: string): never {
  throw new ProtocolError(
    "invalid_template",
    `Cannot accept chat template: ${what} at line ${node.lineno + 1}, column ${node.colno + 1}`,
  );
}

/** The children of a NodeList-like node. */
export function children(node: TemplateNode): TemplateNode[] {
  return (node.children as TemplateNode[] | undefined) ?? [];
}

function statements(nodes: TemplateNode[], scope: Scope): void {
  for (const node of nodes) statement(node, scope);
}

function statement(node: TemplateNode, scope: Scope): void {
  switch (node.typename) {
    case "Output":
      for (const child of children(node)) {
        if (child.typename === "TemplateData") continue;
        expression(child, scope);
      }
      return;
    case "If": {
      expression(node.cond as TemplateNode, scope);
      statements(children(node.body as TemplateNode), scope);
      const other = node.else_ as TemplateNode | null;
      if (other === null) return;
      if (other.typename === "If") statement(other, scope);
      else statements(children(other), scope);
      return;
    }
    case "For": {
      if (scope.inLoop) fail(node, "a nested loop");
      const name = node.name as TemplateNode;
      const arr = node.arr as TemplateNode;
      if (name.typename !== "Symbol" || name.value !== "message") {
        fail(name, "a loop variable other than message");
      }
      if (arr.typename !== "Symbol" || arr.value !== "messages") {
        fail(arr, "a loop over something other than messages");
      }
      if (node.else_ !== null) fail(node, "a loop with an else branch");
      scope.inLoop = true;
      statements(children(node.body as TemplateNode), scope);
      scope.inLoop = false;
      return;
    }
    default:
      fail(node, `the statement ${describe(node)}`);
  }
}

function expression(node: TemplateNode, scope: Scope): void {
  switch (node.typename) {
    case "Literal": {
      const v = node.value;
      if (typeof v === "string" || typeof v === "boolean" || v === null) return;
      if (typeof v === "number" && Number.isSafeInteger(v)) return;
      return fail(node, `the constant ${String(v)}`);
    }
    case "Symbol":
      if ((FREE_NAMES as readonly unknown[]).includes(node.value)) return;
      return fail(node, `the bare name ${String(node.value)}`);
    case "LookupVal":
      return lookup(node, scope);
    case "Group": {
      const inner = children(node);
      if (inner.length !== 1) fail(node, "a tuple");
      return expression(inner[0]!, scope);
    }
    case "Not":
      return expression(node.target as TemplateNode, scope);
    case "And":
    case "Or":
      expression(node.left as TemplateNode, scope);
      return expression(node.right as TemplateNode, scope);
    case "Add":
    case "Concat":
      if (++scope.concatenations > MAX_TEMPLATE_CONCATENATIONS) {
        fail(node, `concatenation number ${scope.concatenations} (at most ${MAX_TEMPLATE_CONCATENATIONS})`);
      }
      expression(node.left as TemplateNode, scope);
      return expression(node.right as TemplateNode, scope);
    case "Compare": {
      expression(node.expr as TemplateNode, scope);
      for (const op of node.ops as TemplateNode[]) {
        if (!COMPARISONS.has(String(op.type))) fail(op, `the comparison ${String(op.type)}`);
        expression(op.expr as TemplateNode, scope);
      }
      return;
    }
    default:
      fail(node, `the expression ${describe(node)}`);
  }
}

/** `message[field]`, `loop.field` or `messages[N][field]`; nothing else may be looked up. */
function lookup(node: TemplateNode, scope: Scope): void {
  const target = node.target as TemplateNode;
  const val = node.val as TemplateNode;
  const key = val.typename === "Literal" ? val.value : undefined;
  if (target.typename === "Symbol" && target.value === "message") {
    if (!scope.inLoop) fail(node, "message outside the loop");
    if (!(MESSAGE_FIELDS as readonly unknown[]).includes(key)) fail(val, `the message field ${shown(val)}`);
    return;
  }
  if (target.typename === "Symbol" && target.value === "loop") {
    if (!scope.inLoop) fail(node, "loop outside the loop");
    if (!(LOOP_FIELDS as readonly unknown[]).includes(key)) fail(val, `the loop field ${shown(val)}`);
    return;
  }
  if (target.typename === "LookupVal") {
    const base = target.target as TemplateNode;
    const index = target.val as TemplateNode;
    if (base.typename === "Symbol" && base.value === "messages") {
      const i = index.typename === "Literal" ? index.value : undefined;
      if (typeof i !== "number" || !Number.isSafeInteger(i) || i < 0) {
        fail(index, `the messages index ${shown(index)}`);
      }
      if (!(MESSAGE_FIELDS as readonly unknown[]).includes(key)) fail(val, `the message field ${shown(val)}`);
      return;
    }
  }
  fail(node, `the lookup ${shown(val)} on ${describe(target)}`);
}

function shown(node: TemplateNode): string {
  return node.typename === "Literal" ? JSON.stringify(node.value) : describe(node);
}

function describe(node: TemplateNode): string {
  if (node.typename === "Symbol") return `name ${String(node.value)}`;
  return node.typename;
}
