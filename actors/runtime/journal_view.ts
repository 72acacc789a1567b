/**
 * A journal as a document for a person or a script (`deno task journal`): operations, workflow instances and
 * their events, and submissions; or one operation in full with its steps and the events it recorded.
 *
 * @example
 * ```ts
 * import { Journal } from "./journal.ts";
 * import { describeJournal, formatJournal } from "./journal_view.ts";
 * console.log(formatJournal(describeJournal(Journal.open("/tmp/home/journal.sqlite", { readOnly: true }))));
 * ```
 */
import { canonical, type JsonObject, type JsonValue, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { toHex } from "../../core/hex.ts";
import { EventLog, type EventRecord } from "./event_log.ts";
import { type Journal, JOURNAL_FORMAT, type OperationRecord } from "./journal.ts";

function json(bytes: Uint8Array | string | null): JsonValue {
  if (bytes === null) return null;
  const text = typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes);
  try {
    return parseJson(text);
  } catch {
    return { bytes_hex: typeof bytes === "string" ? text : toHex(bytes) };
  }
}

function operationJson(op: OperationRecord, full: boolean): JsonObject {
  const out: JsonObject = {
    seq: op.seq,
    op_id: op.opId,
    handler: op.handler,
    status: op.status,
    input_hash: op.inputHash,
    result: json(op.result),
  };
  if (full) out.input = json(op.input);
  return out;
}

function eventJson(e: EventRecord): JsonObject {
  return {
    instance: e.instance,
    seq: e.seq,
    machine: e.machine,
    machine_version: e.machineVersion,
    op_id: e.opId,
    op_pos: e.opPos,
    event: json(e.event),
    env: json(e.env),
    outcome: json(e.outcome),
    state: json(e.state),
    state_hash: e.stateHash,
  };
}

/** The whole journal, or (with `op`) one operation with its steps and events. */
export function describeJournal(journal: Journal, options: { readonly op?: string } = {}): JsonObject {
  const log = new EventLog(journal);
  if (options.op !== undefined) {
    const op = journal.operation(options.op);
    if (op === null) {
      throw new ProtocolError("not_found", `Cannot show operation ${options.op}: not in the journal`);
    }
    const events = log.instances().flatMap((i) => log.events(i.instance)).filter((e) => e.opId === op.opId);
    return {
      format: JOURNAL_FORMAT,
      operation: operationJson(op, true),
      steps: journal.steps(op.opId).map((s) => ({ pos: s.pos, name: s.name, result: json(s.result) })),
      events: events.map(eventJson),
    };
  }
  const instances = log.instances().map((i) => {
    const events = log.events(i.instance);
    return {
      instance: i.instance,
      machine: i.machine,
      machine_version: i.machineVersion,
      initial: json(i.initial),
      events: events.map(eventJson),
    };
  });
  const submissions = journal.db.prepare(
    "SELECT intent, hash, status, height, code, message FROM submissions ORDER BY seq",
  )
    .all() as JsonObject[];
  return {
    format: JOURNAL_FORMAT,
    operations: journal.operations().map((op) => operationJson(op, false)),
    instances,
    submissions: submissions.map((s) => ({ ...s })),
  };
}

function short(value: JsonValue, max = 120): string {
  const text = canonical(value);
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

/** A person-readable rendering of `describeJournal`'s document. */
export function formatJournal(doc: JsonObject): string {
  const lines: string[] = [];
  const eventLine = (e: JsonObject) => {
    const outcome = e.outcome as JsonObject;
    const verdict = outcome.ok === true ? "ok" : `rejected ${String(outcome.code)}`;
    return `  #${e.seq} ${short(e.event!, 80)} ${verdict} -> ${short(e.state!, 80)} ${e.state_hash}`;
  };
  if (doc.operation !== undefined) {
    const op = doc.operation as JsonObject;
    lines.push(`operation ${op.op_id} (#${op.seq}, handler ${op.handler}, ${op.status})`);
    lines.push(
      `  input hash: ${op.input_hash}`,
      `  input:  ${short(op.input!)}`,
      `  result: ${short(op.result!)}`,
    );
    const steps = doc.steps as JsonObject[];
    lines.push(`steps (${steps.length}):`);
    for (const s of steps) lines.push(`  ${s.pos} ${s.name} = ${short(s.result!)}`);
    const events = doc.events as JsonObject[];
    lines.push(`events (${events.length}):`);
    for (const e of events) lines.push(`  ${e.instance}` + eventLine(e));
    return lines.join("\n");
  }
  const ops = doc.operations as JsonObject[];
  lines.push(`operations (${ops.length}):`);
  for (const op of ops) {
    lines.push(
      `  #${op.seq} ${op.op_id} ${op.handler} ${op.status} ${op.result === null ? "" : short(op.result!)}`,
    );
  }
  const instances = doc.instances as JsonObject[];
  lines.push(`instances (${instances.length}):`);
  for (const inst of instances) {
    const events = inst.events as JsonObject[];
    lines.push(`  ${inst.instance} ${inst.machine} v${inst.machine_version}, ${events.length} events:`);
    for (const e of events) lines.push("  " + eventLine(e));
  }
  const subs = doc.submissions as JsonObject[];
  lines.push(`submissions (${subs.length}):`);
  for (const s of subs) {
    const where = s.height === null ? "" : ` at height ${s.height}`;
    const why = s.code === null ? "" : ` ${s.code}: ${s.message}`;
    lines.push(`  ${s.intent} ${s.status}${where}${why} hash ${s.hash}`);
  }
  return lines.join("\n");
}
