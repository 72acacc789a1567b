/**
 * Replaying a journal's workflow events through the pure machines, checking every recorded state hash.
 *
 * Used twice: by `DurableActor.open` to rebuild each instance's state on restart (a divergence stops the
 * actor), and by `deno task replay` for a tester who wants to see exactly where a journal and the machines
 * disagree. The first divergence is reported with the instance, the event index, the event, the paths at which
 * the expected (recorded) and actual (recomputed) states differ, and both states whole with their hashes.
 *
 * @example
 * ```ts
 * import { Journal } from "./journal.ts";
 * import { formatDivergence, replayJournal } from "./replay.ts";
 * const report = replayJournal(Journal.open("/tmp/home/journal.sqlite"), []);
 * if (!report.ok) console.log(formatDivergence(report.divergence));
 * ```
 */
import { canonical, type JsonValue, parseJson } from "../../core/canonical.ts";
import { jsonDiff } from "../../core/json_diff.ts";
import { createHash } from "node:crypto";
import { ProtocolError } from "../../core/errors.ts";
import type { Machine, MachineEnv, MachineEvent, MachineState } from "../../workflows/machine.ts";
import { EventLog, type EventRecord, type InstanceRecord } from "./event_log.ts";
import type { Journal } from "./journal.ts";

/** Any defined machine, as the runtime holds them (by name). */
export type AnyMachine = Machine<MachineState, MachineEvent, unknown>;

/** Where a replay first disagrees with the journal. `index` is null when the instance itself is wrong. */
export interface Divergence {
  readonly instance: string;
  readonly machine: string;
  readonly index: number | null;
  readonly reason: string;
  /** The recorded event (canonical text), when there is one. */
  readonly event: string | null;
  readonly expectedHash: string | null;
  readonly expectedState: string | null;
  readonly actualHash: string | null;
  readonly actualState: string | null;
}

/** A replayed instance: its final state and how many events it took. */
export interface ReplayedInstance {
  readonly instance: string;
  readonly machine: string;
  readonly machineVersion: number;
  readonly events: number;
  readonly state: MachineState;
  readonly stateHash: string;
}

/** The replay of one instance or of a whole journal. */
export type ReplayResult<T> = { readonly ok: true; readonly value: T } | {
  readonly ok: false;
  readonly divergence: Divergence;
};

/** The fields of a recorded event that a replay reads. */
export type ReplayEvent = Pick<
  EventRecord,
  "seq" | "machine" | "machineVersion" | "event" | "env" | "outcome" | "state" | "stateHash"
>;

/** sha256 hex of canonical (ASCII) text: the same bytes as `id(value)` hashes. */
function hashText(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/**
 * Parses canonical text strictly: the platform parser, then re-encoding must give the text back (which
 * rejects duplicate keys, floats, unsafe integers, lone surrogates and any non-canonical spelling).
 */
function parseCanonical(text: string): JsonValue {
  let value: JsonValue;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ProtocolError("invalid_json", `Cannot parse JSON: ${(e as Error).message}`);
  }
  if (canonical(value) !== text) {
    throw new ProtocolError("non_canonical", "Cannot accept JSON: the bytes are not in canonical form");
  }
  return value;
}

const ACCEPTED = '{"ok":true}';

/** Replays the recorded `events` of instance `inst` through `machine`, checking each recorded state hash. */
export function replayInstance(
  machine: AnyMachine | undefined,
  inst: InstanceRecord,
  events: Iterable<ReplayEvent>,
): ReplayResult<ReplayedInstance> {
  const fail = (index: number | null, reason: string, more: Partial<Divergence> = {}) => ({
    ok: false as const,
    divergence: {
      instance: inst.instance,
      machine: `${inst.machine} v${inst.machineVersion}`,
      index,
      reason,
      event: null,
      expectedHash: null,
      expectedState: null,
      actualHash: null,
      actualState: null,
      ...more,
    },
  });
  if (machine === undefined) return fail(null, `no machine named ${inst.machine} is registered`);
  if (machine.version !== inst.machineVersion) {
    return fail(
      null,
      `the journal records version ${inst.machineVersion}, the registry has ${machine.version}`,
    );
  }
  if (hashText(inst.initial) !== inst.initialHash) {
    return fail(null, "the recorded initial state does not match its recorded hash", {
      expectedHash: inst.initialHash,
      actualHash: hashText(inst.initial),
    });
  }
  let state: MachineState;
  try {
    state = parseCanonical(inst.initial) as unknown as MachineState;
  } catch (e) {
    return fail(null, `the initial state is not canonical JSON: ${(e as Error).message}`);
  }
  let stateText = inst.initial;
  let envText = "";
  let env: MachineEnv<unknown> | null = null;
  let index = -1;
  for (const rec of events) {
    index++;
    const before = stateText;
    const recorded = () => ({
      event: rec.event,
      expectedHash: rec.stateHash,
      expectedState: rec.state,
      actualState: before,
      actualHash: hashText(before),
    });
    if (rec.seq !== index) {
      return fail(index, `expected event #${index}, the journal has #${rec.seq}`, recorded());
    }
    if (rec.machine !== inst.machine || rec.machineVersion !== inst.machineVersion) {
      return fail(index, `the event names machine ${rec.machine} v${rec.machineVersion}`, recorded());
    }
    let event: MachineEvent;
    try {
      event = parseCanonical(rec.event) as unknown as MachineEvent;
      if (rec.env !== envText) {
        env = parseCanonical(rec.env) as unknown as MachineEnv<unknown>;
        envText = rec.env;
      }
    } catch (e) {
      return fail(index, `the event or env is not canonical JSON: ${(e as Error).message}`, recorded());
    }
    let step;
    try {
      step = machine.apply(state, event, env!);
    } catch (e) {
      return fail(index, `the machine threw: ${(e as Error).message}`, recorded());
    }
    const next = step.ok ? step.state : state;
    const nextText = canonical(next);
    const nextHash = hashText(nextText);
    const outcome = step.ok ? { ok: true } : { ok: false, code: step.code };
    const recordedOutcome = rec.outcome === ACCEPTED
      ? { ok: true }
      : JSON.parse(rec.outcome) as { ok: boolean; code?: string };
    const sameOutcome = outcome.ok === recordedOutcome.ok &&
      (outcome.ok || outcome.code === recordedOutcome.code);
    const actual = { ...recorded(), actualState: nextText, actualHash: nextHash };
    if (!sameOutcome) {
      return fail(
        index,
        `the machine ${
          step.ok ? "accepted the event" : `rejected the event with ${step.code}`
        }, the journal ` +
          `records ${recordedOutcome.ok ? "acceptance" : `rejection ${recordedOutcome.code}`}`,
        actual,
      );
    }
    if (nextHash !== rec.stateHash) return fail(index, "the state after the event differs", actual);
    if (nextText !== rec.state) {
      return fail(index, "the recorded state does not match its recorded hash", actual);
    }
    state = next;
    stateText = nextText;
  }
  return {
    ok: true,
    value: {
      instance: inst.instance,
      machine: inst.machine,
      machineVersion: inst.machineVersion,
      events: index + 1,
      state,
      stateHash: hashText(stateText),
    },
  };
}

/** Replays every instance of `journal` with the machines given (looked up by name), stopping at the first divergence. */
export function replayJournal(
  journal: Journal,
  machines: Iterable<AnyMachine>,
): ReplayResult<ReplayedInstance[]> {
  const byName = new Map<string, AnyMachine>();
  for (const m of machines) byName.set(m.name, m);
  const log = new EventLog(journal);
  const out: ReplayedInstance[] = [];
  for (const inst of log.instances()) {
    const r = replayInstance(byName.get(inst.machine), inst, log.replayEvents(inst.instance));
    if (!r.ok) return r;
    out.push(r.value);
  }
  return { ok: true, value: out };
}

/**
 * The paths at which a divergence's expected and actual states differ (see `core/json_diff.ts`), or an empty
 * list when either state is missing or is not JSON.
 */
export function stateDifferences(d: Divergence): string[] {
  if (d.expectedState === null || d.actualState === null) return [];
  try {
    return jsonDiff(parseJson(d.expectedState), parseJson(d.actualState));
  } catch {
    return [];
  }
}

/** A person-readable report of a divergence, one fact per line: what differs first, then both states whole. */
export function formatDivergence(d: Divergence): string {
  const lines = [
    `Replay diverges in instance ${d.instance} (${d.machine})` +
    (d.index === null ? "" : ` at event #${d.index}`) + `: ${d.reason}`,
  ];
  if (d.event !== null) lines.push(`  event:          ${d.event}`);
  const differences = stateDifferences(d);
  if (differences.length > 0) {
    lines.push("  differences (expected = recorded, actual = recomputed):");
    for (const line of differences) lines.push(`    ${line}`);
  }
  if (d.expectedState !== null) lines.push(`  expected state: ${d.expectedState}`);
  if (d.expectedHash !== null) lines.push(`  expected hash:  ${d.expectedHash}`);
  if (d.actualState !== null) lines.push(`  actual state:   ${d.actualState}`);
  if (d.actualHash !== null) lines.push(`  actual hash:    ${d.actualHash}`);
  return lines.join("\n");
}

/** The divergence as a JSON value (for `--json` output), with the differing paths as `differences`. */
export function divergenceJson(d: Divergence): JsonValue {
  return { ...d, differences: stateDifferences(d) };
}
