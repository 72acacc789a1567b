/**
 * The epoch controller (ARCHITECTURE "Actors", PROTOCOL §12 "Epoch controller"): one durable actor that
 * drives an epoch — collect and propose a cohort (the Curator), wait for the validators to vote it in,
 * optionally grow the model by identity blocks (`growth.ts`), train its scheduled steps (the Sponsor), open
 * and complete its evaluation (the Evaluator) and record the decision — as the `workflows/epoch.ts` machine,
 * in its own journal `HOME/journal.sqlite`.
 *
 * An epoch is one operation, `epoch/<n>` (input: the epoch's settings, fixed when it began), run after the
 * day's budget charged it (`daily_budget.ts`). Its flow below reads top to bottom: each phase is a journaled
 * step (`ctx.step`) whose result is committed before the epoch moves on, and each transition is a machine
 * event committed (with its env and state hash) before the next phase acts on it. Killed at any moment, the
 * same command re-executes the unfinished operation: recorded steps return their results, recorded events
 * their states, and the phase that was running is run again — each role resumes from its own journal
 * (nothing proposed, reserved, claimed or scored twice; a signed transaction whose reply was lost is looked up
 * by its hash). Control flow follows the states the events return, never the live instance, so a re-execution
 * takes the same path as the first execution.
 *
 * @example
 * ```ts
 * import { EpochController } from "./controller.ts";
 * // const c = await EpochController.open({ home, chain, config, setup, say: console.log });
 * // const report = await c.run(); // resumes the unfinished epoch, or charges and runs the next
 * ```
 */
import { decodeCanonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import type { ChainClient } from "../common/chain.ts";
import type { ChainSetup } from "../common/chain_setup.ts";
import type { Home } from "../common/home.ts";
import { defineActor, DurableActor, type OperationContext } from "../runtime/durable.ts";
import { epoch, type EpochEvent, type EpochState, nextAction, startEpoch } from "../../workflows/epoch.ts";
import type { EpochConfig } from "./config.ts";
import { chargeEpoch, chargeHandler, charges } from "./daily_budget.ts";
import type { GrowthOutcome } from "./growth.ts";
import { type ActivationOutcome, type EvaluationOutcome, Roles, type StepAttempt } from "./roles.ts";

/** What an epoch operation is asked (journaled with it: a resumed epoch keeps its first settings). */
export interface EpochInput extends JsonObject {
  epoch: number;
  collect_rows: number;
  train_documents: number;
  attempts: number;
  /** Identity blocks to grow before the cohort's first step (0: no growth). */
  growth_blocks: number;
}

/** What a finished epoch reports (the operation's recorded result; `deno task epoch history`). */
export interface EpochReport extends JsonObject {
  epoch: number;
  outcome: string;
  reason: string;
  cohort: JsonObject | null;
  steps: StepAttempt[];
  growth: GrowthOutcome | null;
  evaluation: EvaluationOutcome | null;
  charged_atoms: number;
  balance_before: number;
  balance_after: number;
  /** Atoms the controller's account spent over the epoch (fees and burned bonds; rewards are the workers'). */
  cost: number;
}

/** What a controller runs with. */
export interface ControllerSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  readonly config: EpochConfig;
  /** The chain's genesis facts (the machine's params). */
  readonly genesis: ChainSetup;
  readonly say: (line: string) => void;
  /** The wall clock (default `Date.now`): the day the budget charges and every journaled time. */
  readonly clock?: () => number;
}

/** The instance name of epoch `n` in the journal. */
export function instanceOf(n: number): string {
  return `epoch-${n}`;
}

/** The operation id of epoch `n`. */
export function epochOpId(n: number): string {
  return `epoch/${n}`;
}

/** A running controller over one home. */
export class EpochController {
  private constructor(
    readonly setup: ControllerSetup,
    readonly roles: Roles,
    public actor: DurableActor,
  ) {}

  /** Opens the journal (a divergence from the machine stops it here); nothing is resumed yet. */
  static async open(setup: ControllerSetup): Promise<EpochController> {
    const roles = new Roles({ home: setup.home, chain: setup.chain, config: setup.config, say: setup.say });
    const c = new EpochController(setup, roles, null as unknown as DurableActor);
    c.actor = await DurableActor.open(setup.home.journal, c.definition(), {
      recover: false,
      ...(setup.clock ? { clock: setup.clock } : {}),
    });
    return c;
  }

  /** Closes the role journals (the controller's own journal belongs to the home). */
  close(): void {
    this.roles.close();
  }

  /**
   * Resumes the unfinished epoch, or (when the last one is finished) charges the next one against the day's
   * budget and runs it; returns its report. Throws `day_budget_spent` when the day's budget refuses it.
   */
  async run(): Promise<EpochReport> {
    const journal = this.setup.home.journal;
    const epochs = journal.operations().filter((op) => op.handler === "epoch");
    const last = epochs.at(-1);
    if (last !== undefined && last.status === "begun") {
      this.setup.say(`resuming epoch ${(decodeCanonical(last.input!) as EpochInput).epoch}`);
      return this.unwrap(await this.actor.deliver("epoch", last.opId, decodeCanonical(last.input!)));
    }
    const n = epochs.length + 1;
    const { config } = this.setup;
    const charge = await chargeEpoch(this.actor, this.setup.clock ?? Date.now, {
      epoch: n,
      atoms: config.epoch_atoms,
      limits: config.daily,
    });
    this.setup.say(`epoch ${n} charged ${charge.atoms} atoms on ${charge.day}`);
    const input: EpochInput = {
      epoch: n,
      collect_rows: config.collect_rows,
      train_documents: config.train_documents,
      attempts: config.attempts,
      growth_blocks: config.growth.blocks,
    };
    return this.unwrap(await this.actor.deliver("epoch", epochOpId(n), input));
  }

  private unwrap(bytes: Uint8Array): EpochReport {
    const r = decodeCanonical(bytes) as { ok: boolean; value?: EpochReport; code?: string; message?: string };
    if (!r.ok) throw new ProtocolError(r.code as never, r.message ?? "");
    return r.value!;
  }

  private definition() {
    return defineActor({
      name: "epoch",
      machines: [epoch as never],
      handlers: {
        charge: chargeHandler,
        epoch: (ctx, input) => this.runEpoch(ctx, input as EpochInput),
      },
    });
  }

  /** One epoch, from collecting to the decision. */
  private async runEpoch(ctx: OperationContext, input: EpochInput): Promise<JsonValue> {
    const n = input.epoch;
    const charge = charges(this.setup.home.journal).find((c) => c.epoch === n);
    if (charge === undefined) {
      throw new ProtocolError("day_budget_spent", `Cannot run epoch ${n}: it was never charged`);
    }
    const started = startEpoch({ epoch: n, attempts: input.attempts });
    if (!started.ok) throw new ProtocolError(started.code, started.message);
    const wf = ctx.workflow(instanceOf(n), epoch, started.state);
    let state: EpochState = started.state;
    const step = <T extends JsonValue>(name: string, fn: () => Promise<T>) =>
      ctx.step(name, () => this.patient(fn));
    const record = async (event: EpochEvent) => {
      const env = await step("env", () => this.env());
      const r = wf.record(event, { ...env, params: this.setup.genesis.params });
      if (!r.ok) throw new ProtocolError(r.code, r.message);
      state = r.state;
      this.setup.say(`epoch ${n}: ${event.type} → ${state.status}`);
    };
    const balanceBefore = await step("balance", () => this.balance());
    let cohort: JsonObject | null = null;
    const steps: StepAttempt[] = [];
    let evaluation: EvaluationOutcome | null = null;
    let growth: GrowthOutcome | null = null;

    for (;;) {
      const s = state;
      switch (nextAction(s)) {
        case "collect": {
          // The collect's ends first, so a re-run after a kill between two sources' collects reads the same rows.
          const ends = await step("collect_ends", () => this.roles.collectEnds(input.collect_rows));
          const p = await step("propose", () => this.roles.collectAndPropose(input, ends));
          cohort = { data_root: p.data_root, proposal: p.proposal, documents: p.documents };
          await record({ type: "collected", data_root: p.data_root, documents: p.documents });
          await record({ type: "proposed", proposal_id: p.proposal });
          break;
        }
        case "await_activation": {
          if (s.status !== "proposing" || s.proposal_id === null) throw this.bug(s);
          const proposal = s.proposal_id;
          const a: ActivationOutcome = await step(
            "activation",
            () => this.roles.awaitActivation(proposal, s.data_root),
          );
          cohort = { ...(cohort ?? {}), ...a };
          await record(a.activated ? { type: "activated", steps: a.steps } : { type: "proposal_expired" });
          break;
        }
        case "reserve": {
          if (s.status !== "training") throw this.bug(s);
          const index = s.settled;
          if (index === 0 && input.growth_blocks > 0 && growth === null) {
            // Before the cohort's first step, the only time the ledger allows a growth.
            growth = await step("growth", () => this.roles.grow(n, input.growth_blocks));
          }
          const tried = await step("train", () => this.roles.trainStep(n, index, input.attempts));
          for (const a of tried) {
            steps.push(a);
            await record({ type: "reserved", index, assignment_id: a.assignment_id });
            await record(
              a.outcome === "settled"
                ? { type: "step_settled", index }
                : { type: "step_failed", index, reason: a.reason ?? "failed" },
            );
            if (state.status === "decided") break;
          }
          break;
        }
        case "open_evaluation": {
          const id = await step("open_evaluation", () => this.roles.openEvaluation());
          await record({ type: "evaluation_opened", evaluation_id: id });
          break;
        }
        case "await_decision": {
          if (s.status !== "evaluating" || s.evaluation_id === null) throw this.bug(s);
          const id = s.evaluation_id;
          evaluation = await step("decision", () => this.roles.decide(id));
          await record({ type: "evaluation_decided", promoted: evaluation.promoted });
          break;
        }
        case "compute_and_claim":
          throw this.bug(s);
        case "done": {
          if (s.status !== "decided") throw this.bug(s);
          const balanceAfter = await step("balance_after", () => this.balance());
          return {
            epoch: n,
            outcome: s.outcome,
            reason: s.reason,
            cohort,
            steps,
            growth,
            evaluation,
            charged_atoms: charge.atoms,
            balance_before: balanceBefore,
            balance_after: balanceAfter,
            cost: balanceBefore - balanceAfter,
          } satisfies EpochReport;
        }
      }
    }
  }

  /**
   * Runs `fn` until it answers: a `RetryableError` (a validator stopped, a worker gone) is reported and the
   * phase is run again after a pause, so a network that comes back is waited for, not given up on.
   */
  private async patient<T>(fn: () => Promise<T>): Promise<T> {
    let said = "";
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof RetryableError)) throw e;
        if (e.message !== said) this.setup.say(`waiting: ${e.message}`);
        said = e.message;
        await new Promise((r) => setTimeout(r, Math.max(this.setup.config.poll_ms, 500)));
      }
    }
  }

  private bug(s: EpochState): ProtocolError {
    return new ProtocolError("internal_error", `Cannot drive epoch ${s.epoch}: unexpected state ${s.status}`);
  }

  /** The height and block time the next event is recorded at. */
  private async env(): Promise<{ height: number; time: number }> {
    const { height } = await this.setup.chain.status();
    const b = await this.setup.chain.block(height) as { block?: { time?: number } };
    return { height, time: b.block?.time ?? 0 };
  }

  private async balance(): Promise<number> {
    return (await this.setup.chain.account(this.setup.home.key.accountId)).balance;
  }
}
