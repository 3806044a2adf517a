// Activation and passivation: which contexts have a live actor, spawned under its parent's (the actor tree mirrors the delegation tree).
//
// Requirements:
// - Activating a context activates its ancestors first; a context being activated is activated once.
// - An actor starts from its folded stream; a context the log shows running has no run here, so it starts `failed`.
// - Every append of a context's writer reaches its ActiveContext and its actor, as the store recorded it
//   (a pause, resume or intervention as its command event, anything else as `facts.apply`).
// - A run this process drove ends when its machine says so (`run.ended`): then its lease is released,
//   its waiters answered and its actor scheduled for passivation.
// - A run this process parked (`run.parked`) lets its lease go; its waiters keep waiting for its end.
// - An idle context's actor is passivated after `passivateAfterMs`, once none of its children is active.
import { createActor, type AnyActorLogic, type AnyActorRef } from "xstate";
import type { RecordedEvent } from "../events/schema.ts";
import { asContextId, asRunId } from "../events/ids.ts";
import { commandEventOf, type ContextMachineContext, type ContextMachineInput } from "../actors/contextMachine.ts";
import { StreamWriter } from "../actors/streamWriter.ts";
import { ActiveContext } from "./activeContext.ts";
import { RuntimeError } from "./errors.ts";
import type { Core } from "./core.ts";

export class Registry {
  readonly active = new Map<string, ActiveContext>();
  private readonly activating = new Map<string, Promise<ActiveContext>>();
  /** The context machine with this runtime's run actors; set once the runtime is built. */
  machine!: AnyActorLogic;
  core!: Core;

  /** Makes a context's actor live, activating its ancestors first. */
  async activate(id: string): Promise<ActiveContext> {
    this.assertOpen();
    const existing = this.active.get(id);
    if (existing) return this.touch(existing);
    const pending = this.activating.get(id);
    if (pending) return pending;
    const p = this.load(id).finally(() => this.activating.delete(id));
    this.activating.set(id, p);
    return p;
  }

  /** Activates a context whose whole stream the caller holds (one it just created): no read needed. */
  async activateNew(id: string, events: RecordedEvent[]): Promise<ActiveContext> {
    this.assertOpen();
    const existing = this.active.get(id);
    if (existing) return this.touch(existing);
    const p = this.load(id, events).finally(() => this.activating.delete(id));
    this.activating.set(id, p);
    const ac = await p;
    // Idle until its first message, which touches it: passivated like any idle context meanwhile.
    if (!ac.actor.getSnapshot().matches("running")) this.schedulePassivation(ac);
    return ac;
  }

  /** Appends the first events of a new stream. */
  appendNew(id: string, events: Parameters<StreamWriter["append"]>[0]): Promise<RecordedEvent[]> {
    return new StreamWriter(this.core.store, asContextId(id), 0, this.core.config.clock, () => undefined).append(events);
  }

  private assertOpen(): void {
    if (this.core.closed) throw new RuntimeError("closed", "The runtime is closed.");
  }

  private async load(id: string, known?: RecordedEvent[]): Promise<ActiveContext> {
    const events = known ?? (await this.core.store.readStream(id));
    if (events.length === 0) throw new RuntimeError("not_found", `Context '${id}' was not found.`);
    const ac = new ActiveContext(asContextId(id), events);
    ac.writer = new StreamWriter(this.core.store, ac.id, ac.view.version, this.core.config.clock, (facts) => this.onAppended(ac, facts));
    const input: ContextMachineInput = {
      contextId: ac.id,
      version: ac.view.version,
      status: ac.view.status,
      paused: ac.view.paused,
      failure: ac.view.failure,
      runId: ac.view.currentRunId === null ? null : asRunId(ac.view.currentRunId),
      awaitingApproval: ac.view.awaitingApproval,
    };
    if (ac.view.parentContextId) {
      const parent = await this.activate(ac.view.parentContextId);
      parent.actor.send({ type: "child.activate", contextId: ac.id, logic: this.machine, input });
      const ref = parent.actor.getSnapshot().children[ac.id] as AnyActorRef | undefined;
      if (!ref) throw new Error(`actor for context ${id} was not spawned`);
      ac.actor = ref;
    } else {
      ac.actor = createActor(this.machine, { input, id: ac.id, systemId: ac.id });
      ac.actor.start();
    }
    this.active.set(id, ac);
    return this.touch(ac);
  }

  touch(ac: ActiveContext): ActiveContext {
    if (ac.passivateTimer) {
      clearTimeout(ac.passivateTimer);
      ac.passivateTimer = null;
    }
    return ac;
  }

  private onAppended(ac: ActiveContext, facts: RecordedEvent[]): void {
    ac.apply(facts);
    if (this.core.closed) return;
    // A command's fact goes as its command event (the command asked the machine first); should the
    // machine no longer allow it, the fact is on the log all the same and is applied as a fact.
    const command = commandEventOf(facts);
    const snapshot = ac.actor.getSnapshot() as { can(e: unknown): boolean };
    ac.actor.send(command && snapshot.can(command) ? command : { type: "facts.apply", facts });
  }

  /** The machine ended a run of this process (its `run.ended` action). */
  runEnded(machine: ContextMachineContext): void {
    const ac = this.active.get(machine.contextId);
    const handle = ac?.run;
    if (!ac || !handle) return;
    // A recorded end frees the lease in the log (nothing to write); an end the store refused must delete it.
    const unrecorded = machine.unrecorded?.runId === handle.runId;
    ac.leaseReleased = (unrecorded ? this.core.leases.release(ac.id) : this.core.leases.runEnded(ac.id)).catch(() => undefined);
    // Projections are not caught up here: queries catch up on their own, off the runs' path.
    if (!this.core.closed) this.schedulePassivation(ac);
    ac.answer(handle.runId, machine.unrecorded?.runId === handle.runId ? machine.unrecorded.message : null);
  }

  /**
   * The machine parked a run of this process (its `run.parked` action): the run's lease is let go, so the
   * process that records the last decision (this one or another) drives it on. Its waiters keep waiting.
   */
  runParked(machine: ContextMachineContext): void {
    const ac = this.active.get(machine.contextId);
    if (!ac) return;
    ac.leaseReleased = this.core.leases.release(ac.id).catch(() => undefined);
  }

  private schedulePassivation(ac: ActiveContext): void {
    if (ac.passivateTimer) clearTimeout(ac.passivateTimer);
    ac.passivateTimer = setTimeout(() => this.passivate(ac), this.core.config.limits.passivateAfterMs);
    ac.passivateTimer.unref();
  }

  /** Stops an idle context's actor (not its run: it has none) once none of its children is active. */
  private passivate(ac: ActiveContext): void {
    ac.passivateTimer = null;
    if (this.active.get(ac.id) !== ac) return;
    if (ac.actor.getSnapshot().matches("running")) return;
    const hasActiveChild = Object.keys(ac.actor.getSnapshot().children).some((k) => this.active.has(k));
    if (hasActiveChild) {
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
