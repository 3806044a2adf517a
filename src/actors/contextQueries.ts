// What the runtime may ask a context's machine, in the machine's own types: the one place that names its states.
//
// Requirements:
// - The actor and its snapshot are typed from the machine (`ActorRefFrom`, `SnapshotFrom`): a state name or an
//   event the machine does not have is a type error, and no caller writes a snapshot shape of its own.
// - Each question the runtime asks (is a run in flight, is it parked, may a message join it, which run is
//   open) is one predicate here, read from the snapshot only.
import { type ActorRefFrom, type AnyActorRef, type SnapshotFrom, waitFor } from "xstate";
import type { ContextMachine } from "./contextMachine.ts";
import type { ContextStatus } from "../projections/runStatus.ts";
import type { RunId } from "../events/ids.ts";

export type ContextActor = ActorRefFrom<ContextMachine>;
export type ContextSnapshot = SnapshotFrom<ContextMachine>;

/** A run is open in the machine: in flight, parked awaiting a decision, or stopping. */
export const isRunning = (s: ContextSnapshot): boolean => s.matches("running");

/** The run's invocation is going in this process (not parked, not stopping). */
export const isActive = (s: ContextSnapshot): boolean => s.matches({ running: "active" });

/** The run waits for a decision (approval or budget); nothing of it is in flight. */
export const isParked = (s: ContextSnapshot): boolean => s.matches({ running: "parked" });

/** The stop of the run is being recorded. */
export const isStopping = (s: ContextSnapshot): boolean => s.matches({ running: "stopping" });

/** Something of the run is in flight here (active or stopping): a close records it as interrupted. */
export const isInFlight = (s: ContextSnapshot): boolean => isRunning(s) && !isParked(s);

/** A run is in flight (or parked) here and the log still shows it open: a message joins it, a stop reaches it. */
export const acceptsMessage = (s: ContextSnapshot): boolean =>
  (isActive(s) || isParked(s)) && s.context.status === "running";

/** The run the log shows open, as the machine holds it. */
export const openRunId = (s: ContextSnapshot): RunId | null => s.context.runId;

/**
 * The log shows the context's run open (`logStatus`), and no run of this process is in flight there: it is
 * parked here, or went on in another process.
 */
export const runsElsewhere = (s: ContextSnapshot, logStatus: ContextStatus): boolean =>
  logStatus === "running" && !isActive(s) && !isStopping(s);

/** The actor was stopped (by a close): it answers nothing any more. */
export const isStoppedActor = (actor: ContextActor): boolean => actor.getSnapshot().status === "stopped";

/** The run held parked, and the approvals it waits for, or null. */
export const parkedRun = (s: ContextSnapshot): { runId: RunId; approvals: readonly string[] } | null =>
  isParked(s) && s.context.runId ? { runId: s.context.runId, approvals: s.context.awaitingApproval } : null;

/** A child context's actor, as its parent spawned it (`child.activate` spawns the context machine itself). */
export const childActor = (parent: ContextActor, id: string): ContextActor | undefined =>
  (parent.getSnapshot().children as Record<string, AnyActorRef | undefined>)[id] as ContextActor | undefined;

/** Whether any child this actor spawned is among `ids`. */
export const hasChildIn = (actor: ContextActor, ids: { has(id: string): boolean }): boolean =>
  Object.keys(actor.getSnapshot().children).some((k) => ids.has(k));

/** Resolves once the machine is not paused (at once when it is not); rejects when `signal` aborts. */
export const whileNotPaused = async (actor: ContextActor, signal: AbortSignal): Promise<void> => {
  await waitFor(actor, (s) => !s.context.paused, { timeout: Infinity, signal });
};
