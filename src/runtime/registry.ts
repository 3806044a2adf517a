// Activation and passivation: which contexts have a live actor, spawned under its parent's (the actor tree mirrors the delegation tree).
//
// Requirements:
// - Activating a context activates its ancestors first; a context being activated is activated once.
// - An actor starts from its folded stream; a context the log shows running has no run here, so it starts `failed`.
// - Every append of a context's writer reaches its ContextSession and its actor, as the store recorded it
//   (a pause, resume or intervention as its command event, anything else as `facts.apply`).
// - A run this process drove ends when its machine says so (`run.ended`): then its lease is released,
//   its waiters answered and its actor scheduled for passivation.
// - A run this process parked (`run.parked`) lets its lease go; its waiters keep waiting for its end.
// - On a shared log, facts another process appends to a context active here whose run the log shows open but
//   none of this process is in flight (parked here, then decided and run on elsewhere) are read into it
//   (`followLog`): the machine follows them, and the run's end answers its waiters here (a parent's
//   call_subordinate). Read in the context's command queue, so no append of this process interleaves.
// - A fresh subordinate is live before its ContextCreated is on the log (that event opens its first append):
//   until then it is never passivated, and a delegation that starts no run records it alone.
// - An idle context's actor is passivated after `passivateAfterMs`, once none of its children is active;
//   a subordinate replaced in its slot (a fresh call_subordinate: its parent can no longer continue it) at
//   once. XState copies a machine's children on every spawn and stop, its runs' included, so each live
//   child costs its parent's every run: a long conversation keeps one per slot, not one per delegation.
import { createActor, fromPromise } from "xstate";
import type { DataOf, RecordedEvent } from "../events/schema.ts";
import { asContextId, asRunId } from "../events/ids.ts";
import { outcomeOf } from "../projections/runOutcome.ts";
import { unrecordedView } from "../projections/contexts.ts";
import {
  commandEventOf,
  contextMachine,
  type ContextMachine,
  type ContextMachineContext,
  type ContextMachineInput,
  factsChangeContext,
  type RunActorInput,
  type RunOutput,
} from "../actors/contextMachine.ts";
import { type EventStore, sharedByProcesses } from "../events/store.ts";
import { childActor, hasChildIn, isRunning, runsElsewhere } from "../actors/contextQueries.ts";
import { StreamWriter } from "../actors/streamWriter.ts";
import { ContextSession, type ContextPorts } from "./contextSession.ts";
import { RuntimeError } from "./errors.ts";
import type { Configuration } from "./configuration.ts";
import type { Leases } from "./leases.ts";
import type { BudgetLedger } from "./budgetLedger.ts";
import type { Lifecycle } from "./lifecycle.ts";

/** What the machine invokes for a context (runs.ts and approvals.ts): the run, the recorded stop, the approval timeout. */
export type ContextActors = {
  run(input: RunActorInput, signal: AbortSignal): Promise<RunOutput>;
  stopRun(input: RunActorInput): Promise<RunOutput>;
  approvalTimeout(input: RunActorInput, signal: AbortSignal): Promise<void>;
};

export type RegistryParts = {
  readonly store: EventStore;
  readonly config: Configuration;
  readonly leases: Leases;
  readonly lifecycle: Lifecycle;
  readonly budgets: BudgetLedger;
  /** Called only once a run starts, so they may belong to parts built after the registry. */
  readonly actors: ContextActors;
  /** The take-over of a run a gone process left (recovery.ts), called only once a lease is taken. */
  readonly takeOver: ContextPorts["takeOver"];
};

export class Registry {
  readonly active = new Map<string, ContextSession>();
  private readonly activating = new Map<string, Promise<ContextSession>>();
  /** The context machine with this runtime's run actors. */
  private readonly machine: ContextMachine;
  private readonly store: EventStore;
  private readonly config: Configuration;
  private readonly leases: Leases;
  private readonly lifecycle: Lifecycle;
  private readonly budgets: BudgetLedger;

  /** What each context uses of the runtime. */
  private readonly ports: ContextPorts;

  constructor({ store, config, leases, lifecycle, budgets, actors, takeOver }: RegistryParts) {
    this.ports = {
      store,
      clock: config.clock,
      shared: sharedByProcesses(store),
      leases,
      takeOver: (ac, mode) => takeOver(ac, mode),
    };
    this.store = store;
    this.config = config;
    this.leases = leases;
    this.lifecycle = lifecycle;
    this.budgets = budgets;
    this.machine = contextMachine.provide({
      actors: {
        run: fromPromise<RunOutput, RunActorInput>(({ input, signal }) => actors.run(input, signal)),
        stopRun: fromPromise<RunOutput, RunActorInput>(({ input }) => actors.stopRun(input)),
        approvalTimeout: fromPromise<void, RunActorInput>(({ input, signal }) => actors.approvalTimeout(input, signal)),
      },
      actions: {
        "run.ended": ({ context }) => this.runEnded(context),
        "run.parked": ({ context }) => this.runParked(context),
      },
    });
  }

  /** Makes a context's actor live, activating its ancestors first. */
  activate(id: string): Promise<ContextSession> {
    return this.activateFrom(id);
  }

  /** Activates a context whose whole stream the caller holds (one it just created): no read needed. */
  async activateNew(id: string, events: RecordedEvent[]): Promise<ContextSession> {
    const ac = await this.activateFrom(id, events);
    // Idle until its first message, which touches it: passivated like any idle context meanwhile.
    if (!isRunning(ac.actor.getSnapshot())) this.schedulePassivation(ac);
    return ac;
  }

  /**
   * Activates a fresh subordinate before anything of it is on the log: its ContextCreated opens its stream's
   * first append (its first run's start), which saves the child an append of its own. Until that append it is
   * not passivated (nothing could load it back), and `recordOpening` writes it alone where no run follows.
   */
  activateUnrecorded(created: DataOf<"ContextCreated">): Promise<ContextSession> {
    return this.activateFrom(created.contextId, created);
  }

  /** The one way an actor goes live: the live one, or the activation under way, or a load from `known` (else the log). */
  private async activateFrom(id: string, known?: RecordedEvent[] | DataOf<"ContextCreated">): Promise<ContextSession> {
    this.assertOpen();
    const existing = this.active.get(id);
    if (existing) return this.touch(existing);
    const pending = this.activating.get(id);
    if (pending) return pending;
    const p = this.load(id, known).finally(() => this.activating.delete(id));
    this.activating.set(id, p);
    return p;
  }

  /** Writes a context's ContextCreated alone if it still waits for its first append (a delegation that started no run). */
  async recordOpening(id: string): Promise<void> {
    const ac = this.active.get(id);
    if (!ac || ac.writer.opened) return;
    await ac.writer.append([]);
    if (!isRunning(ac.actor.getSnapshot()) && !this.lifecycle.closed) this.schedulePassivation(ac);
  }

  /** Appends the first events of a new stream. */
  appendNew(id: string, events: Parameters<StreamWriter["append"]>[0]): Promise<RecordedEvent[]> {
    return new StreamWriter(this.store, asContextId(id), 0, this.config.clock, () => undefined).append(events);
  }

  private assertOpen(): void {
    this.lifecycle.assertOpen();
  }

  /** `known`: the whole stream, or the ContextCreated of a context not on the log yet. */
  private async load(id: string, known?: RecordedEvent[] | DataOf<"ContextCreated">): Promise<ContextSession> {
    const unrecorded = known !== undefined && !Array.isArray(known) ? known : null;
    const events = unrecorded ? [] : ((known as RecordedEvent[] | undefined) ?? (await this.store.readStream(id)));
    if (events.length === 0 && !unrecorded) throw new RuntimeError("not_found", `Context '${id}' was not found.`);
    const ac = new ContextSession(asContextId(id), events, this.ports, unrecorded, (ac, facts) =>
      this.onAppended(ac, facts),
    );
    const input: ContextMachineInput = {
      contextId: ac.id,
      version: ac.view.version,
      status: ac.view.status,
      paused: ac.view.paused,
      failure: ac.view.failure,
      runId: ac.view.currentRunId === null ? null : asRunId(ac.view.currentRunId),
      awaitingApproval: ac.view.awaitingApproval,
      awaitingJobApproval: ac.view.awaitingJobApproval,
    };
    if (ac.view.parentContextId) {
      const parent = await this.activate(ac.view.parentContextId);
      parent.actor.send({ type: "child.activate", contextId: ac.id, logic: this.machine, input });
      const ref = childActor(parent.actor, ac.id);
      if (!ref) throw new Error(`actor for context ${id} was not spawned`);
      ac.attach(ref);
    } else {
      const actor = createActor(this.machine, { input, id: ac.id, systemId: ac.id });
      ac.attach(actor);
      actor.start();
    }
    this.active.set(id, ac);
    return this.touch(ac);
  }

  touch(ac: ContextSession): ContextSession {
    ac.stayActive();
    return ac;
  }

  private onAppended(ac: ContextSession, facts: RecordedEvent[]): void {
    const replaced = replacedChildren(ac, facts);
    ac.apply(facts);
    // A budgeted reply settles its reservation as it reaches the log (budgetLedger.ts).
    this.budgets.replied(ac.view.rootContextId, facts);
    if (this.lifecycle.closed) return;
    // A command's fact goes as its command event (the command asked the machine first); should the
    // machine no longer allow it, the fact is on the log all the same and is applied as a fact.
    const command = commandEventOf(facts);
    const snapshot = ac.actor.getSnapshot();
    if (command && snapshot.can(command)) ac.actor.send(command);
    // A running machine only assigns what facts change: most of a run's own facts (a reply, a tool's
    // call and result) change nothing it holds, and sending them cost about a tenth of a step's JavaScript.
    else if (!isRunning(snapshot) || factsChangeContext(snapshot.context, facts))
      ac.actor.send({ type: "facts.apply", facts });
    for (const id of replaced) {
      const child = this.active.get(id);
      if (child) this.passivate(child);
    }
  }

  /** The machine ended a run of this process (its `run.ended` action): its lease let go, its waiters answered. */
  runEnded(machine: ContextMachineContext): void {
    const ac = this.active.get(machine.contextId);
    if (!ac?.run) return;
    // Projections are not caught up here: queries catch up on their own, off the runs' path.
    if (!this.lifecycle.closed) this.schedulePassivation(ac);
    ac.runEnded(machine.unrecorded);
  }

  /** The machine parked a run of this process (its `run.parked` action): its lease is let go (contextSession.ts). */
  runParked(machine: ContextMachineContext): void {
    this.active.get(machine.contextId)?.runParked();
  }

  /** A fact on the shared log (any process's): read into its context when the log shows a run open there that is not in flight here. */
  followLog(fact: RecordedEvent): void {
    const ac = this.active.get(fact.streamId);
    if (
      !ac ||
      this.lifecycle.closed ||
      fact.streamVersion <= ac.view.version ||
      !runsElsewhere(ac.actor.getSnapshot(), ac.view.status)
    )
      return;
    void ac
      .serialize(async () => {
        if (this.lifecycle.closed || !runsElsewhere(ac.actor.getSnapshot(), ac.view.status)) return;
        const newer = await ac.catchUp();
        const end = ac.lastEnd;
        // The end of a run this process parked, recorded where it went on: its waiters here have their answer.
        if (!newer.some((f) => outcomeOf(f) !== null) || !end) return;
        if (ac.outcomes.has(end.runId)) ac.answer(end.runId, null);
        if (!isRunning(ac.actor.getSnapshot())) this.schedulePassivation(ac);
      })
      .catch(() => undefined);
  }

  private schedulePassivation(ac: ContextSession): void {
    ac.schedulePassivation(this.config.limits.passivateAfterMs, () => this.passivate(ac));
  }

  /** Stops an idle context's actor (not its run: it has none) once none of its children is active. */
  private passivate(ac: ContextSession): void {
    ac.stayActive();
    if (this.active.get(ac.id) !== ac) return;
    // Not on the log yet: passivated now, it could not be loaded back. Its first append schedules it again.
    if (!ac.writer.opened) return;
    if (isRunning(ac.actor.getSnapshot())) return;
    if (hasChildIn(ac.actor, this.active)) {
      this.schedulePassivation(ac);
      return;
    }
    this.active.delete(ac.id);
    if (ac.view.parentContextId) {
      const parent = this.active.get(ac.view.parentContextId);
      parent?.actor.send({ type: "child.passivate", contextId: ac.id });
    } else {
      ac.actor.stop();
    }
  }
}

/**
 * The children a fresh call_subordinate among `facts` replaces in their slot (read before the facts are
 * applied). The parent can no longer continue them; anyone else reaches them through the log.
 */
const replacedChildren = (ac: ContextSession, facts: readonly RecordedEvent[]): string[] => {
  const replaced: string[] = [];
  for (const f of facts) {
    if (f.type !== "SubordinateCalled" || !f.data.fresh) continue;
    const slot = f.data.jobId ?? "default";
    const previous = ac.children.findLast((c) => c.slot === slot);
    if (previous && previous.contextId !== f.data.childContextId) replaced.push(previous.contextId);
  }
  return replaced;
};
