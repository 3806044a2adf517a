// Stop, pause and resume of a run another process drives, on a log several processes share (PostgreSQL).
//
// Requirements:
// - Only the process that holds a context's run lease writes its stream, so a request from anyone else is recorded
//   in a stream of its own (`<contextId>:control`, RunControlRequested) and reaches the driver at once through the
//   store's live subscription (LISTEN/NOTIFY on PostgreSQL).
// - The driver acts on a request for a run it drives as on its own command: a stop is recorded as RunStopped by the
//   user, down the tree; a pause or resume as ContextPaused / ContextResumed.
// - The requester waits until the driver has recorded it and answers as the local command would. A driver that dies
//   meanwhile loses its lease; the run is then recorded as interrupted (by the sweeper) and that is the answer.
import { controlStreamOf } from "../events/streams.ts";
import { asContextId, asRunId } from "../events/ids.ts";
import type { RecordedEvent } from "../events/schema.ts";
import { sharedByProcesses, type Unsubscribe } from "../events/store.ts";
import { outcomeOf, type RunOutcome } from "../projections/runOutcome.ts";
import type { Projections } from "../projections/engine.ts";
import type { Commands } from "./commands.ts";
import type { Configuration } from "./configuration.ts";
import { RuntimeError } from "./errors.ts";
import { leaseHolder, type Leases } from "./leases.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Recovery } from "./recovery.ts";
import type { Registry } from "./registry.ts";
import type { EventStore } from "../events/store.ts";

export type ControlAction = "stop" | "pause" | "resume";

export type ControlParts = {
  readonly store: EventStore;
  readonly projections: Projections;
  readonly leases: Leases;
  readonly registry: Registry;
  readonly commands: Commands;
  readonly recovery: Recovery;
  readonly config: Configuration;
  readonly lifecycle: Lifecycle;
};

/** Both sides of a control request (see the requirements above). */
export class ControlRequests {
  constructor(private readonly parts: ControlParts) {}

  /**
   * The driver's side, for each fact of the runtime's one subscription to a shared log (runtime.ts): acts on a
   * request for a run this runtime drives.
   */
  answer(e: RecordedEvent): void {
    if (e.type !== "RunControlRequested" || this.parts.lifecycle.closed) return;
    const { contextId, runId, action } = e.data;
    const run = this.parts.registry.active.get(contextId)?.run;
    if (!run || run.runId !== runId) return;
    const { commands } = this.parts;
    const done =
      action === "stop"
        ? commands.stop(contextId, "user")
        : action === "pause"
          ? commands.pause(contextId)
          : commands.resume(contextId);
    void done.catch(() => undefined);
  }

  /**
   * The requester's side: when another live process drives the context's run, records the request, waits until that
   * process has acted, and returns `{ outcome }` (the run's outcome for a stop, null for a pause or resume). Returns
   * null when no other process drives a run of the context (the caller acts itself).
   */
  async request(contextId: string, action: ControlAction): Promise<{ outcome: RunOutcome | null } | null> {
    if (!sharedByProcesses(this.parts.store)) return null;
    await this.parts.projections.catchUp();
    const view = await this.parts.projections.contexts.get(contextId);
    if (!view || view.status !== "running" || !view.currentRunId) return null;
    const runId = view.currentRunId;
    const owner = await leaseHolder(this.parts.store.sql, contextId);
    if (owner === this.parts.leases.owner) return null;
    if (owner === null) {
      // Nobody drives it: its process died. Record that now (the sweeper would, later) and let the caller report it.
      await this.parts.recovery.recoverInterruptedRuns();
      return null;
    }
    const head = await this.parts.store.headPosition();
    const answered = this.waitFor(head, (e) => {
      if (e.streamId !== contextId) return undefined;
      const outcome = outcomeOf(e);
      if (outcome?.runId === runId) return { outcome };
      if (action === "pause" && e.type === "ContextPaused") return { outcome: null };
      if (action === "resume" && e.type === "ContextResumed") return { outcome: null };
      return undefined;
    });
    const stream = controlStreamOf(contextId);
    await this.parts.store.append(
      stream,
      [{ type: "RunControlRequested", data: { contextId: asContextId(contextId), runId: asRunId(runId), action } }],
      {
        expectedVersion: "any",
      },
    );
    return answered;
  }

  /** The first event after `after` that `match` answers, or a RuntimeError once the driver has had twice a lease's time. */
  private waitFor<T>(after: number, match: (e: RecordedEvent) => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let unsubscribe: Unsubscribe = () => undefined;
      const finish = (f: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        unsubscribe();
        f();
      };
      const ms = Math.max(5_000, this.parts.config.limits.leaseTtlMs * 2);
      const timer = setTimeout(
        () =>
          finish(() =>
            reject(
              new RuntimeError(
                "busy",
                `The process driving this context did not answer within ${ms} ms; its lease will expire if it is gone.`,
              ),
            ),
          ),
        ms,
      );
      unsubscribe = this.parts.store.subscribe(after, (e) => {
        const answer = match(e);
        if (answer !== undefined) finish(() => resolve(answer));
      });
    });
  }
}
