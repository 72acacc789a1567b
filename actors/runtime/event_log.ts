/**
 * The workflow event log inside an actor's journal: instances of typed machines (`workflows/machine.ts`) and
 * the events each received, in order. Every event row records the machine's name and version, the event and
 * its env, the outcome (accepted or the rejection), the state after it and that state's hash
 * (`stateHash`), so `deno task replay` can re-run the machine and name the first event that disagrees.
 *
 * Event indexes (`seq`) start at 0 per instance. All text columns hold canonical JSON.
 *
 * @example
 * ```ts
 * import { Journal } from "./journal.ts";
 * import { EventLog } from "./event_log.ts";
 * const log = new EventLog(Journal.open("/tmp/home/journal.sqlite"));
 * for (const inst of log.instances()) console.log(inst.instance, log.events(inst.instance).length);
 * ```
 */
import { canonical } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { crashPoint } from "./crash_point.ts";
import { type Journal, JOURNAL_FORMAT } from "./journal.ts";
import type { ReplayEvent } from "./replay.ts";

/** A workflow instance: which machine (name and version) it runs and from which initial state. */
export interface InstanceRecord {
  readonly instance: string;
  readonly format: number;
  readonly machine: string;
  readonly machineVersion: number;
  /** The initial state, canonical JSON. */
  readonly initial: string;
  readonly initialHash: string;
}

/** One recorded event of an instance. JSON fields are canonical text. */
export interface EventRecord {
  readonly instance: string;
  readonly seq: number;
  readonly format: number;
  readonly machine: string;
  readonly machineVersion: number;
  /** The operation that recorded it and the position inside it, or null for events recorded directly. */
  readonly opId: string | null;
  readonly opPos: number | null;
  readonly event: string;
  readonly env: string;
  /** `{"ok":true}` or the rejection `{"code":..,"message":..,"ok":false}`. */
  readonly outcome: string;
  /** The state after the event (unchanged when rejected) and its hash. */
  readonly state: string;
  readonly stateHash: string;
}

/** What `append` needs; the log fills in the sequence number, format and hash. */
export interface NewEvent {
  readonly instance: string;
  readonly opId?: string;
  readonly opPos?: number;
  readonly event: unknown;
  readonly env: unknown;
  readonly outcome: unknown;
  readonly state: unknown;
}

type Row = Record<string, unknown>;

/** Reads and appends workflow instances and events of one journal. */
export class EventLog {
  constructor(readonly journal: Journal) {}

  /**
   * Creates instance `instance` of machine `name`/`version` starting at `initial`; creating it again with the
   * same definition is a no-op, with another one it throws `ProtocolError(journal_divergence)`.
   */
  createInstance(
    instance: string,
    machine: { readonly name: string; readonly version: number },
    initial: unknown,
  ): InstanceRecord {
    const text = canonical(initial);
    const found = this.instance(instance);
    if (found !== null) {
      if (
        found.machine !== machine.name || found.machineVersion !== machine.version || found.initial !== text
      ) {
        throw new ProtocolError(
          "journal_divergence",
          `Cannot create instance ${instance}: recorded as ${found.machine} v${found.machineVersion} ` +
            `from ${found.initial}, now ${machine.name} v${machine.version} from ${text}`,
        );
      }
      return found;
    }
    this.journal.db.prepare(
      `INSERT INTO instances(instance, format, machine, machine_version, initial, initial_hash, seq)
       VALUES (?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM instances))`,
    ).run(instance, JOURNAL_FORMAT, machine.name, machine.version, text, hashText(text));
    crashPoint("instance");
    return this.instance(instance)!;
  }

  /** The instance record, or null. */
  instance(instance: string): InstanceRecord | null {
    const row = this.journal.db.prepare("SELECT * FROM instances WHERE instance = ?").get(instance) as
      | Row
      | undefined;
    return row === undefined ? null : toInstance(row);
  }

  /** Every instance, in creation order. */
  instances(): InstanceRecord[] {
    return (this.journal.db.prepare("SELECT * FROM instances ORDER BY seq").all() as Row[]).map(toInstance);
  }

  /** Appends an event to its instance (committed on return) and returns the record. */
  append(e: NewEvent): EventRecord {
    const inst = this.instance(e.instance);
    if (inst === null) {
      throw new ProtocolError("not_found", `Cannot append event: instance ${e.instance} does not exist`);
    }
    const state = canonical(e.state);
    const record = this.journal.transaction(() => {
      const last = this.journal.db.prepare("SELECT MAX(seq) AS s FROM events WHERE instance = ?").get(
        e.instance,
      ) as Row;
      const rec: EventRecord = {
        instance: e.instance,
        seq: last.s === null ? 0 : Number(last.s) + 1,
        format: JOURNAL_FORMAT,
        machine: inst.machine,
        machineVersion: inst.machineVersion,
        opId: e.opId ?? null,
        opPos: e.opPos ?? null,
        event: canonical(e.event),
        env: canonical(e.env),
        outcome: canonical(e.outcome),
        state,
        stateHash: hashText(state),
      };
      this.journal.db.prepare(
        `INSERT INTO events(instance, seq, format, machine, machine_version, op_id, op_pos, event, env, outcome,
           state, state_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        rec.instance,
        rec.seq,
        rec.format,
        rec.machine,
        rec.machineVersion,
        rec.opId,
        rec.opPos,
        rec.event,
        rec.env,
        rec.outcome,
        rec.state,
        rec.stateHash,
      );
      return rec;
    });
    crashPoint("event");
    return record;
  }

  /** Every event of `instance`, in order. */
  events(instance: string): EventRecord[] {
    return (this.journal.db.prepare("SELECT * FROM events WHERE instance = ? ORDER BY seq").all(
      instance,
    ) as Row[])
      .map(toEvent);
  }

  /** The fields of every event of `instance` a replay needs, in order, streamed (a lighter read than `events`). */
  *replayEvents(instance: string): Generator<ReplayEvent> {
    const rows = this.journal.db.prepare(
      `SELECT seq, machine, machine_version, event, env, outcome, state, state_hash FROM events
       WHERE instance = ? ORDER BY seq`,
    ).iterate(instance) as Iterable<Row>;
    for (const r of rows) {
      yield {
        seq: r.seq as number,
        machine: r.machine as string,
        machineVersion: r.machine_version as number,
        event: r.event as string,
        env: r.env as string,
        outcome: r.outcome as string,
        state: r.state as string,
        stateHash: r.state_hash as string,
      };
    }
  }

  /** The event recorded by operation `opId` at position `pos`, or null. */
  eventAt(opId: string, pos: number): EventRecord | null {
    const row = this.journal.db.prepare("SELECT * FROM events WHERE op_id = ? AND op_pos = ?").get(
      opId,
      pos,
    ) as
      | Row
      | undefined;
    return row === undefined ? null : toEvent(row);
  }
}

function hashText(text: string): string {
  return sha256Hex(new TextEncoder().encode(text));
}

function toInstance(r: Row): InstanceRecord {
  return {
    instance: String(r.instance),
    format: Number(r.format),
    machine: String(r.machine),
    machineVersion: Number(r.machine_version),
    initial: String(r.initial),
    initialHash: String(r.initial_hash),
  };
}

function toEvent(r: Row): EventRecord {
  return {
    instance: String(r.instance),
    seq: Number(r.seq),
    format: Number(r.format),
    machine: String(r.machine),
    machineVersion: Number(r.machine_version),
    opId: r.op_id === null ? null : String(r.op_id),
    opPos: r.op_pos === null ? null : Number(r.op_pos),
    event: String(r.event),
    env: String(r.env),
    outcome: String(r.outcome),
    state: String(r.state),
    stateHash: String(r.state_hash),
  };
}
