/**
 * Renders a checked chat template (see `chat_template.ts`) by interpreting its syntax tree directly, so no
 * template code is ever compiled or run and no global is reachable. Output is produced as a stream of chunks
 * and stops with `too_large` before the total passes 512 KiB of UTF-8, so a template that repeats long content
 * never builds a large string. Values follow Jinja2: `True`/`False`/`None` print as such, `+` joins two
 * strings, `~` joins the printed forms, truthiness is Python's, there is no escaping (`autoescape` off).
 *
 * @example
 * ```ts
 * import { checkTemplate, SMOLLM2_TEMPLATE } from "./chat_template.ts";
 * import { renderTemplate } from "./template_render.ts";
 * renderTemplate(checkTemplate(SMOLLM2_TEMPLATE), {
 *   messages: [{ role: "user", content: "Hi" }], add_generation_prompt: true,
 *   bos_token: "<|im_start|>", eos_token: "<|im_end|>", pad_token: "<|im_end|>", unk_token: "<|endoftext|>",
 * });
 * ```
 */
import { compareCodePoints } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { MAX_RENDERED_BYTES } from "../core/limits.ts";
import { type CheckedTemplate, children, type TemplateNode } from "./chat_template.ts";

/** One chat message. */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

/** What a template sees. */
export interface TemplateContext {
  readonly messages: readonly ChatMessage[];
  readonly add_generation_prompt: boolean;
  readonly bos_token: string;
  readonly eos_token: string;
  readonly pad_token: string;
  readonly unk_token: string;
}

type Value = string | number | boolean | null | undefined;

interface Loop {
  readonly message: ChatMessage;
  readonly index0: number;
  readonly length: number;
}

/** Yields the rendered output in chunks; throws `too_large` before the total would pass `maxBytes`. */
export function* renderChunks(
  template: CheckedTemplate,
  context: TemplateContext,
  maxBytes: number = MAX_RENDERED_BYTES,
): Generator<string, void, undefined> {
  let total = 0;
  for (const chunk of run(children(template.root), context, null)) {
    total += utf8Length(chunk);
    if (total > maxBytes) {
      throw new ProtocolError(
        "too_large",
        `Cannot render chat template: output passes the bound of ${maxBytes} bytes`,
      );
    }
    yield chunk;
  }
}

/** The whole rendered text (bounded as `renderChunks`). */
export function renderTemplate(
  template: CheckedTemplate,
  context: TemplateContext,
  maxBytes: number = MAX_RENDERED_BYTES,
): string {
  let out = "";
  for (const chunk of renderChunks(template, context, maxBytes)) out += chunk;
  return out;
}

function* run(nodes: TemplateNode[], ctx: TemplateContext, loop: Loop | null): Generator<string> {
  for (const node of nodes) {
    switch (node.typename) {
      case "Output":
        for (const child of children(node)) {
          const text = child.typename === "TemplateData"
            ? String(child.value)
            : print(evaluate(child, ctx, loop));
          if (text.length > 0) yield text;
        }
        break;
      case "If": {
        let branch: TemplateNode | null = node;
        while (branch !== null && branch.typename === "If") {
          if (truthy(evaluate(branch.cond as TemplateNode, ctx, loop))) {
            yield* run(children(branch.body as TemplateNode), ctx, loop);
            branch = null;
          } else branch = branch.else_ as TemplateNode | null;
        }
        if (branch !== null) yield* run(children(branch), ctx, loop);
        break;
      }
      case "For": {
        const length = ctx.messages.length;
        for (let i = 0; i < length; i++) {
          yield* run(children(node.body as TemplateNode), ctx, {
            message: ctx.messages[i]!,
            index0: i,
            length,
          });
        }
        break;
      }
      default:
        failAt(node, `the statement ${node.typename}`);
    }
  }
}

function evaluate(node: TemplateNode, ctx: TemplateContext, loop: Loop | null): Value {
  switch (node.typename) {
    case "Literal":
      return node.value as Value;
    case "Symbol":
      return ctx[node.value as keyof TemplateContext] as Value;
    case "Group":
      return evaluate(children(node)[0]!, ctx, loop);
    case "Not":
      return !truthy(evaluate(node.target as TemplateNode, ctx, loop));
    case "And": {
      const left = evaluate(node.left as TemplateNode, ctx, loop);
      return truthy(left) ? evaluate(node.right as TemplateNode, ctx, loop) : left;
    }
    case "Or": {
      const left = evaluate(node.left as TemplateNode, ctx, loop);
      return truthy(left) ? left : evaluate(node.right as TemplateNode, ctx, loop);
    }
    case "Add": {
      const left = evaluate(node.left as TemplateNode, ctx, loop);
      const right = evaluate(node.right as TemplateNode, ctx, loop);
      if (typeof left === "string" && typeof right === "string") return left + right;
      if (typeof left === "number" && typeof right === "number") return left + right;
      return failAt(node, `+ of ${typeName(left)} and ${typeName(right)}`);
    }
    case "Concat":
      return print(evaluate(node.left as TemplateNode, ctx, loop)) +
        print(evaluate(node.right as TemplateNode, ctx, loop));
    case "Compare": {
      let left = evaluate(node.expr as TemplateNode, ctx, loop);
      for (const op of node.ops as TemplateNode[]) {
        const right = evaluate(op.expr as TemplateNode, ctx, loop);
        if (!compare(String(op.type), left, right, op)) return false;
        left = right;
      }
      return true;
    }
    case "LookupVal":
      return lookup(node, ctx, loop);
    default:
      return failAt(node, `the expression ${node.typename}`);
  }
}

function lookup(node: TemplateNode, ctx: TemplateContext, loop: Loop | null): Value {
  const target = node.target as TemplateNode;
  const key = (node.val as TemplateNode).value as string;
  if (target.typename === "Symbol" && target.value === "loop" && loop !== null) {
    switch (key) {
      case "first":
        return loop.index0 === 0;
      case "last":
        return loop.index0 === loop.length - 1;
      case "index":
        return loop.index0 + 1;
      case "index0":
        return loop.index0;
      case "length":
        return loop.length;
    }
  }
  if (target.typename === "Symbol" && target.value === "message" && loop !== null) {
    return loop.message[key as keyof ChatMessage];
  }
  if (target.typename === "LookupVal") {
    const i = (target.val as TemplateNode).value as number;
    const message = ctx.messages[i];
    if (message === undefined) failAt(target, `messages[${i}] with ${ctx.messages.length} messages`);
    return message[key as keyof ChatMessage];
  }
  return failAt(node, "a lookup outside the bounded subset");
}

/** Python comparison semantics for the values a template can hold. */
function compare(op: string, a: Value, b: Value, node: TemplateNode): boolean {
  if (op === "==") return equal(a, b);
  if (op === "!=") return !equal(a, b);
  let order: number;
  if (isNumeric(a) && isNumeric(b)) order = Number(a) - Number(b);
  else if (typeof a === "string" && typeof b === "string") order = compareCodePoints(a, b);
  else return failAt(node, `${op} between ${typeName(a)} and ${typeName(b)}`);
  switch (op) {
    case "<":
      return order < 0;
    case ">":
      return order > 0;
    case "<=":
      return order <= 0;
    default:
      return order >= 0;
  }
}

function equal(a: Value, b: Value): boolean {
  if (isNumeric(a) && isNumeric(b)) return Number(a) === Number(b);
  return a === b;
}

function isNumeric(v: Value): v is number | boolean {
  return typeof v === "number" || typeof v === "boolean";
}

function truthy(v: Value): boolean {
  return !(v === undefined || v === null || v === false || v === 0 || v === "");
}

/** Jinja2's printed form of a value. */
function print(v: Value): string {
  if (v === undefined) return "";
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  return String(v);
}

function typeName(v: Value): string {
  return v === null ? "none" : typeof v;
}

function failAt(node: TemplateNode, what: string): never {
  throw new ProtocolError(
    "invalid_template",
    `Cannot render chat template: ${what} at line ${node.lineno + 1}, column ${node.colno + 1}`,
  );
}

/** The UTF-8 length of a string without encoding it. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}
