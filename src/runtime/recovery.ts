// Leases and recovery: a run another process (or a crash) left unfinished is resumed here, or recorded as interrupted, exactly once.
//
// Requirements:
// - A run starts only under the context's lease, taken by the context (contextSession.ts `takeLease`), which
//   first brings the actor up to the stream and hands a run left open there to `takeOver`.
// - A context the log shows running whose owner is gone, found on open and on PostgreSQL periodically once
//   leases expire: with recovery "resume", its run goes on here from its last recorded step (resume.ts),
//   deepest contexts first, so a parent waiting on a child finds it resuming; with "interrupt" (and for a
//   run whose own end the store refused), it gets RunInterrupted and its open jobs end as interrupted.
// - A message to a context whose dead run was not taken over yet records that run as interrupted.
// - A run recorded as interrupted first records the fresh children its SubordinateCalled facts name whose
//   stream never opened (cut off before the child's first append), so every child it names exists.
// - Reservations of the tree's budget that the gone run left open are settled from its replies, or released
//   (budgetRecovery.ts), before it resumes or is interrupted.
// - A run parked awaiting approval is neither: its machine restores parked (running), and the decision goes on with it.
// - Closing the runtime records the runs still in flight as interrupted.
import { sharedByProcesses } from "../events/store.ts";
import type { RunId } from "../events/ids.ts";
import { asRunId } from "../events/ids.ts";
import type { DomainEvent } from "../events/schema.ts";
import { ConcurrencyError } from "../events/errors.ts";
import type { ContextView } from "../projections/contexts.ts";
import { jobFinished } from "../tools/jobs.ts";
import { unopenedChildren } from "../tools/unopenedChildren.ts";
import { configuredPresetOf } from "./configuration.ts";
import { isRunning } from "../actors/contextQueries.ts";
import type { ContextSession } from "./contextSession.ts";
import type { EventStore } from "../events/store.ts";
import type { Projections } from "../projections/engine.ts";
import type { BudgetLedger } from "./budgetLedger.ts";
import type { Configuration } from "./configuration.ts";
import type { Leases } from "./leases.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Registry } from "./registry.ts";
import { RuntimeError } from "./errors.ts";
import type { Recovery as RecoveryMode } from "./approvalPolicy.ts";
import { resumeRun } from "./resume.ts";
import { settleLeftOpen } from "./budgetRecovery.ts";

export type RecoveryParts = {
  readonly store: EventStore;
  readonly projections: Projections;
  readonly leases: Leases;
  readonly registry: Registry;
  readonly config: Configuration;
  readonly lifecycle: Lifecycle;
  readonly budgets: BudgetLedger;
};

/** Run leases, and the runs a gone owner left open: taken over here (resumed or recorded as interrupted). */
export class Recovery {
  constructor(private readonly parts: RecoveryParts) {}

  /**
   * The lease just taken (`ContextSession.takeLease`) finds the log showing a run open that is not in flight here:
   * a crash, or an end the store refused. It is recorded as interrupted, or with `openRun` "resume" goes on here
   * (then the lease stays with that run).
   */
  async takeOver(ac: ContextSession, openRun: RecoveryMode): Promise<"resumed" | void> {
    // Its calls' reservations first: the resumed run reserves afresh, an interrupted one never settles.
    await settleLeftOpen(this.parts, ac.view);
    const unrecorded = ac.actor.getSnapshot().context.unrecorded;
    const refused = unrecorded?.runId === ac.view.currentRunId;
    if (openRun === "resume" && !refused) {
      await resumeRun(this.parts.store, ac);
      return "resumed";
    }
    const runId = ac.view.currentRunId;
    await this.interrupt(ac.view, refused ? unrecorded!.message : undefined);
    await ac.catchUp();
    // A resumed parent may be waiting on this run's end.
    if (runId) ac.answer(runId, null);
    // That RunInterrupted is a run end past the version the lease was taken at, and such an end frees a
    // lease in the log: take it again past it, or another process could take it while our run goes on.
    if (sharedByProcesses(this.parts.store)) {
      const again = await this.parts.leases.acquire(ac.id);
      if (!again.ok)
        throw new RuntimeError("busy", `Context '${ac.id}' is running in another process (${again.owner}).`);
    }
  }

  /** A run with no terminal event whose owner is gone (a crash) is recorded as interrupted. */
  async recoverInterruptedRuns(): Promise<void> {
    await this.parts.projections.catchUp();
    const running = await this.parts.projections.contexts.list({ status: "running" });
    const unowned = new Set(await this.parts.leases.unowned(running.map((v) => v.id)));
    // Deepest first: a resumed parent's delegation then finds its child's run already going on here.
    for (const view of [...running].sort((a, b) => b.depth - a.depth)) {
      if (!unowned.has(view.id) || this.parts.lifecycle.closed) continue;
      const ac = await this.parts.registry.activate(view.id);
      // In the context's command queue: no run of this process can start on it meanwhile.
      await ac.serialize(async () => {
        if (isRunning(ac.actor.getSnapshot())) return;
        // The run the projection saw has ended here already (this process's own run, ended after the read
        // above): nothing to take over, and taking the lease even briefly would refuse another process's
        // send to a context that is free. A view older than the projection's says nothing of that run.
        if (ac.view.version >= view.version && ac.view.status !== "running") return;
        // Taking the lease takes the run over; a resumed run keeps the lease, and its end in the log frees it.
        await ac.underLease(async () => undefined, { busy: "skip", openRun: this.parts.config.recovery });
      });
    }
    await this.parts.projections.catchUp();
  }

  /** Records that the view's current run (and its running jobs) ended unfinished; `reason`: why its own end went unrecorded. */
  private async interrupt(view: ContextView, reason?: string): Promise<void> {
    const runId = view.currentRunId;
    if (!runId) return;
    const events: DomainEvent[] = [];
    for (const job of await this.parts.projections.jobs.ofContext(view.id)) {
      if (job.status === "running" || job.status === "pending") {
        events.push(
          jobFinished(
            asRunId(job.runId ?? runId),
            { jobId: job.jobId, contextId: job.childContextId },
            { status: "interrupted" },
          ),
        );
      }
    }
    await this.openNamedChildren(view, runId);
    events.push({
      type: "RunInterrupted",
      data: { runId: asRunId(runId) as RunId, ...(reason === undefined ? {} : { reason }) },
    });
    const withIds = events.map((e) => ({ ...e, eventId: this.parts.config.clock.uuid() as never }));
    try {
      await this.parts.store.append(view.id, withIds, { expectedVersion: view.version });
    } catch (e) {
      // Someone else recorded this context's next fact first: it is not ours to close any more.
      if (!(e instanceof ConcurrencyError)) throw e;
    }
  }

  /**
   * A fresh child's ContextCreated goes out with its first run, after the caller's SubordinateCalled. A run that
   * will not go on, cut off between the two, would leave that SubordinateCalled naming no stream (and its slot's
   * next call a child it cannot load): each such child is recorded now, as its delegation made it, with no run.
   */
  private async openNamedChildren(caller: ContextView, runId: string): Promise<void> {
    const stream = await this.parts.store.readStream(caller.id);
    const isEmpty = async (id: string) =>
      !this.parts.registry.active.has(id) && (await this.parts.store.streamVersion(id)) === 0;
    const rules = {
      configuredPresetOf: (profile: string, project: string | null) =>
        configuredPresetOf(this.parts.config, profile, project),
      profiles: this.parts.config.profiles,
    };
    for (const data of await unopenedChildren(rules, caller, stream, runId, isEmpty)) {
      try {
        await this.parts.registry.appendNew(data.contextId, [{ type: "ContextCreated", data }]);
      } catch (e) {
        // Another process recorded it first.
        if (!(e instanceof ConcurrencyError)) throw e;
      }
    }
  }
}

/** What close() knew of a context before it stopped the actors: a run in flight, or an end the store refused. */
export type AtClose = { ac: ContextSession; inFlight: boolean; unrecorded: { runId: RunId; message: string } | null };

/** On close: every run still in flight here, and its running jobs, end as interrupted; so does a run whose end the store refused. */
export const interruptInFlight = async (contexts: readonly AtClose[]): Promise<void> => {
  for (const { ac, inFlight, unrecorded } of contexts) {
    const handle = ac.run;
    if (!handle || (!inFlight && unrecorded?.runId !== handle.runId)) continue;
    await ac.writer
      .exclusive(async (append) => {
        // Ended meanwhile (the aborted run's last append landed first), or already closed by a restart.
        if (ac.view.currentRunId !== handle.runId) return;
        const jobs = [...handle.jobs.values()].filter((j) => j.status === "running");
        for (const job of jobs) job.status = "interrupted";
        await append([
          ...jobs.map((job) => jobFinished(handle.runId, job, { status: "interrupted" })),
          {
            type: "RunInterrupted",
            data: {
              runId: handle.runId,
              ...(unrecorded?.runId === handle.runId ? { reason: unrecorded.message } : {}),
            },
          },
        ]);
      })
      // The store is unusable: the next open records it.
      .catch(() => undefined);
    ac.answer(handle.runId, unrecorded?.message ?? null);
  }
};
