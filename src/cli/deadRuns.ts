// What a read-only command tells about runs the log shows unfinished: going on, or cut short by a process that is gone.
//
// Requirements:
// - Nothing is written: a run whose owner is gone shows as `interrupted` (not yet recorded) until a writing command
//   records it. The status itself comes from the one status fold (`shownStatus`); this only says whose run is dead.
// - The owner is gone when: on a PGlite data dir this command could open, the dir's lock was free (a live owner holds
//   it); on PostgreSQL, the context has no unexpired run lease. Read through the holder of a data dir, runs are live
//   (the holder recorded the dead ones when it opened the log).
// - A run parked awaiting approval is not dead: it holds no process (nor lock, nor lease) while it waits, and goes
//   on in whichever process records the decision.
// - A run's elapsed time ends at its last event: for a run cut short, not at "now" nor at the moment a later process
//   recorded the interruption.
import type { RecordedEvent } from "../events/schema.ts";
import type { SqlExecutor } from "../events/store.ts";
import { contextsProjection, type ContextView } from "../projections/contexts.ts";
import { foldEvents } from "../projections/projection.ts";
import type { AuditReport, ContextAudit } from "../projections/auditReport.ts";
import type { LogLocation } from "./openLog.ts";
import { shownStatus, type Shown } from "./status.ts";

export type RunTruth = {
  /** True when the context's run is unfinished in the log and no live process drives it. */
  isDead(view: Pick<ContextView, "id" | "status" | "awaitingApproval">): boolean;
  /** The status to show: `shownStatus`, with a dead run shown as interrupted. */
  shown(view: Pick<ContextView, "id" | "status" | "lastRun" | "failure" | "awaitingApproval">): Shown;
};

/** How this command opened the log decides who can still be driving an unfinished run. */
/** `sql`: the log's database, null when it is read through the process that holds it. */
export const runTruth = async (where: LogLocation, sql: SqlExecutor | null): Promise<RunTruth> => {
  const dead = await deadOwners(where, sql);
  const isDead = (view: Pick<ContextView, "id" | "status" | "awaitingApproval">) =>
    view.status === "running" && view.awaitingApproval.length === 0 && dead(view.id);
  return { isDead, shown: (view) => (isDead(view) ? "interrupted" : shownStatus(view)) };
};

const deadOwners = async (where: LogLocation, sql: SqlExecutor | null): Promise<(id: string) => boolean> => {
  if (sql === null) return () => false;
  // This process holds the lock of the data dir (or the log is in memory): no other process can be running it.
  if (where.kind !== "postgres") return () => true;
  const { rows } = await sql.query<{ live: string[] | null }>(
    `SELECT CASE WHEN to_regclass('context_leases') IS NULL THEN ARRAY[]::text[]
            ELSE (SELECT coalesce(array_agg(context_id), ARRAY[]::text[]) FROM context_leases WHERE expires_at >= now()) END AS live`,
  );
  const live = new Set(rows[0]?.live ?? []);
  return (id) => !live.has(id);
};

/**
 * Milliseconds from the start of the context's last run to its end, or to its last event when it has no end
 * recorded or ended interrupted (the interruption is recorded later, by whichever process opened the log next).
 */
export const runElapsedMs = (view: Pick<ContextView, "lastRun">, stream: readonly RecordedEvent[]): number | null => {
  const run = view.lastRun;
  if (!run?.startedAt) return null;
  if (run.endedAt && run.status !== "interrupted") return Date.parse(run.endedAt) - Date.parse(run.startedAt);
  let last: string | null = null;
  for (const e of stream) {
    if (e.type === "RunInterrupted") continue;
    if ((e.data as { runId?: string }).runId === run.runId) last = e.recordedAt;
  }
  return last === null ? null : Date.parse(last) - Date.parse(run.startedAt);
};

/** The audit as a reader tells it: the unfinished runs of dead contexts interrupted, every cut-short run timed to its last event. */
export const auditTruth = (
  report: AuditReport,
  truth: RunTruth,
  streams: ReadonlyMap<string, readonly RecordedEvent[]>,
): AuditReport => {
  const fix = (c: ContextAudit): ContextAudit => {
    const stream = streams.get(c.id) ?? [];
    const awaitingApproval = foldEvents(contextsProjection, stream).get(c.id)?.awaitingApproval ?? [];
    const dead = truth.isDead({ id: c.id, status: c.status, awaitingApproval });
    const runs = c.runs.map((r) => {
      if (r.status === "interrupted" || (r.status === "running" && dead)) {
        const elapsed = runElapsedMs(
          {
            lastRun: {
              runId: r.runId,
              status: "interrupted",
              startedAt: r.startedAt,
              endedAt: r.endedAt,
              response: null,
              superior: null,
            },
          },
          stream,
        );
        return {
          ...r,
          status: "interrupted" as const,
          durationMs: elapsed,
          failure: r.failure ?? {
            reason: "interrupted",
            message: "The run did not finish: its process is gone (not yet recorded in the log).",
          },
        };
      }
      return r;
    });
    return { ...c, runs, children: c.children.map(fix) };
  };
  return { ...report, context: fix(report.context) };
};
