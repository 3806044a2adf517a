// Leases and recovery: a run another process (or a crash) left unfinished is recorded as interrupted, exactly once.
//
// Requirements:
// - A run starts only under the context's lease; the actor is first brought up to the stream, which
//   another process may have extended.
// - A context the log shows running whose owner is gone gets RunInterrupted (and its open jobs end as
//   interrupted): on open, and on PostgreSQL periodically once leases expire.
// - Closing the runtime records the runs still in flight as interrupted.
import type { ContextId, RunId } from "../events/ids.ts";
import { asRunId } from "../events/ids.ts";
import type { DomainEvent } from "../events/schema.ts";
import { ConcurrencyError } from "../events/errors.ts";
import type { ContextView } from "../projections/contexts.ts";
import { JOB_END } from "../tools/jobs.ts";
import type { ActiveContext } from "./activeContext.ts";
import type { Core } from "./core.ts";
import { RuntimeError } from "./errors.ts";

/** Takes the context's run lease, then brings the actor up to the stream; a run a dead owner left is recorded as interrupted. */
export const takeLease = async (core: Core, ac: ActiveContext): Promise<void> => {
  // The last run's release must land first, or it would delete the lease taken here.
  await ac.leaseReleased;
  const lease = await core.leases.acquire(ac.id);
  if (!lease.ok) throw new RuntimeError("busy", `Context '${ac.id}' is running in another process (${lease.owner}).`);
  // Alone on the log (PGlite), nothing can have been appended behind this actor's back.
  if (core.store.kind !== "pglite") await catchUpStream(core, ac);
  if (ac.view.status === "running" && (!ac.run || ac.run.terminal)) {
    await interrupt(core, ac.view);
    await catchUpStream(core, ac);
  }
};

const catchUpStream = async (core: Core, ac: ActiveContext): Promise<void> => {
  const newer = await core.store.readStream(ac.id, ac.view.version + 1);
  if (newer.length === 0) return;
  ac.apply(newer);
  ac.writer.resetVersion(ac.view.version);
  ac.actor.send({ type: "facts.apply", facts: newer });
};

/** A run with no terminal event whose owner is gone (a crash) is recorded as interrupted. */
export const recoverInterruptedRuns = async (core: Core): Promise<void> => {
  await core.projections.catchUp();
  const running = await core.projections.contexts.list({ status: "running" });
  const unowned = new Set(await core.leases.unowned(running.map((v) => v.id)));
  for (const view of running) {
    if (!unowned.has(view.id) || core.closed) continue;
    const ac = await core.registry.activate(view.id);
    // In the context's command queue: no run of this process can start on it meanwhile.
    await ac.serialize(async () => {
      if (ac.run && ac.run.terminal === null) return;
      try {
        await takeLease(core, ac);
      } catch (e) {
        if (e instanceof RuntimeError && e.reason === "busy") return;
        throw e;
      }
      await core.leases.release(ac.id);
    });
  }
  await core.projections.catchUp();
};

/** Records that the view's current run (and its running jobs) ended unfinished. */
const interrupt = async (core: Core, view: ContextView): Promise<void> => {
  const runId = view.currentRunId;
  if (!runId) return;
  const events: DomainEvent[] = [];
  for (const job of await core.projections.jobs.ofContext(view.id)) {
    if (job.status === "running" || job.status === "pending") {
      events.push({
        type: "ParallelJobFinished",
        data: {
          runId: asRunId(job.runId ?? runId),
          jobId: job.jobId as never,
          status: "interrupted",
          result: null,
          error: JOB_END.interrupted,
          contextId: job.childContextId as ContextId | null,
        },
      });
    }
  }
  events.push({ type: "RunInterrupted", data: { runId: asRunId(runId) as RunId } });
  const withIds = events.map((e) => ({ ...e, eventId: core.config.clock.uuid() as never }));
  try {
    await core.store.append(view.id, withIds, { expectedVersion: view.version });
  } catch (e) {
    // Someone else recorded this context's next fact first: it is not ours to close any more.
    if (!(e instanceof ConcurrencyError)) throw e;
  }
};

/** On close: every run still in flight here, and its running jobs, end as interrupted. */
export const interruptInFlight = async (actives: readonly ActiveContext[]): Promise<void> => {
  for (const ac of actives) {
    const handle = ac.run;
    if (!handle) continue;
    if (handle.unrecordedEnd !== null) {
      // The run's end was refused by the store: try once more to close it, as interrupted.
      handle.unrecordedEnd = null;
      await ac.writer.append([{ type: "RunInterrupted", data: { runId: handle.runId } }]).catch(() => undefined);
      continue;
    }
    if (handle.terminal) continue;
    await ac.writer.exclusive(async (append) => {
      if (handle.terminal) return;
      const jobs = [...handle.jobs.values()].filter((j) => j.status === "running");
      for (const job of jobs) job.status = "interrupted";
      handle.terminal = await append([
        ...jobs.map((job) => ({
          type: "ParallelJobFinished" as const,
          data: {
            runId: handle.runId,
            jobId: job.jobId,
            status: "interrupted" as const,
            result: null,
            error: JOB_END.interrupted,
            contextId: (job.contextId as ContextId | null) ?? null,
          },
        })),
        { type: "RunInterrupted", data: { runId: handle.runId } },
      ]);
    });
  }
};
