// The delegation tree as the web page shows it, folded in memory from the log with the projections' own evolve.
//
// Requirements:
// - One row per created context: identity, status, task (its first message), last run's times, own tokens, and
//   the call that first delegated to it (so the page groups parallel jobs under that call).
// - Status and tokens come from `contextsProjection` and `usageProjection` (the same fold the stored projections
//   run), so the tree at a position is exactly what the projections held then.
// - Folding continues from where it stopped: feed it events in log order, any number of times.
import type { RecordedEvent, Superior } from "../events/schema.ts";
import { contextsProjection, type ContextView } from "../projections/contexts.ts";
import { foldEvents } from "../projections/projection.ts";
import { usageProjection, type UsageView } from "../projections/usage.ts";

/** Longest task text a row carries; the timeline has the whole message. */
export const TASK_CHARS = 240;

export type TreeRow = {
  id: string;
  parentId: string | null;
  rootId: string;
  agentNumber: number;
  depth: number;
  name: string;
  profile: string;
  slot: string | null;
  status: ContextView["status"];
  paused: boolean;
  /** Approval ids the running context waits on (its run is parked until each is decided). */
  awaitingApproval: string[];
  /** The running context's model call waits in the runtime's queue (a concurrency cap or a rate limit holds it). */
  queued: boolean;
  failure: ContextView["failure"];
  /** The context's first message (cut to TASK_CHARS), null before it got one. */
  task: string | null;
  /** The superior's call behind the context's first run (jobId set for a parallel job), null for a root. */
  call: { contextId: string; toolCallId: string; jobId: string | null } | null;
  /** For a context a parallel job started: the tool call that started the jobs (its siblings share it). */
  parallelCall: string | null;
  /** How the last run ended ("running" while it runs), null before the first: the page says `completed` as the CLI does. */
  lastRunStatus: string | null;
  /** The last run: when it started and ended (null while running). */
  startedAt: string | null;
  endedAt: string | null;
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  /** The limit of its tree's budget its run is parked on (its next call would pass it), null otherwise. */
  parkedOnBudget: string | null;
  /** For a root: the tokens of its whole tree (itself and every context below it); null for the others. */
  treeTokens: { inputTokens: number; outputTokens: number } | null;
  /** A remote subordinate: the agent its task went to and that task's id (null for a local context). */
  remote: ContextView["remote"];
  createdPosition: number;
  /** The last position applied to this context. */
  position: number;
};

export class TreeFold {
  private readonly contexts = new Map<string, ContextView>();
  private readonly usage = new Map<string, UsageView>();
  private readonly tasks = new Map<string, string>();
  private readonly calls = new Map<string, Superior>();
  /** Job id → the `parallel` tool call that started it. */
  private readonly jobCalls = new Map<string, string>();
  /** The last position folded in, and when it was recorded (a view of the past measures running times to it). */
  position = 0;
  recordedAt: string | null = null;

  apply(events: readonly RecordedEvent[]): void {
    if (events.length === 0) return;
    foldEvents(contextsProjection, events, this.contexts);
    foldEvents(usageProjection, events, this.usage);
    for (const e of events) {
      if (e.globalPosition <= this.position) continue;
      if (e.type === "MessageReceived" && !this.tasks.has(e.streamId))
        this.tasks.set(e.streamId, e.data.text.slice(0, TASK_CHARS));
      if (e.type === "ParallelJobStarted") this.jobCalls.set(e.data.jobId, e.data.toolCallId);
      if (e.type === "RunStarted" && e.data.superior && !this.calls.has(e.streamId))
        this.calls.set(e.streamId, e.data.superior);
      this.position = e.globalPosition;
      this.recordedAt = e.recordedAt;
    }
  }

  /** Rows of every created context (or of `ids` only), in creation order. */
  rows(ids?: readonly string[]): TreeRow[] {
    const views = ids ? ids.flatMap((id) => this.contexts.get(id) ?? []) : [...this.contexts.values()];
    const totals = new Map<string, { inputTokens: number; outputTokens: number }>();
    if (views.some((v) => v.parentContextId === null)) {
      for (const u of this.usage.values()) {
        if (u.rootContextId === null) continue;
        const t = totals.get(u.rootContextId) ?? { inputTokens: 0, outputTokens: 0 };
        t.inputTokens += u.inputTokens;
        t.outputTokens += u.outputTokens;
        totals.set(u.rootContextId, t);
      }
    }
    return views
      .filter((v) => v.createdPosition > 0)
      .sort((a, b) => a.createdPosition - b.createdPosition)
      .map((v) =>
        this.row(v, v.parentContextId === null ? (totals.get(v.id) ?? { inputTokens: 0, outputTokens: 0 }) : null),
      );
  }

  private row(v: ContextView, treeTokens: TreeRow["treeTokens"]): TreeRow {
    const u = this.usage.get(v.id);
    const sup = this.calls.get(v.id);
    return {
      id: v.id,
      parentId: v.parentContextId,
      rootId: v.rootContextId,
      agentNumber: v.agentNumber,
      depth: v.depth,
      name: v.name,
      profile: v.profile,
      slot: v.slot,
      status: v.status,
      paused: v.paused,
      awaitingApproval: v.status === "running" ? v.awaitingApproval : [],
      queued: v.status === "running" && v.queued,
      parkedOnBudget: v.status === "running" ? (v.parkedOnBudget?.limit ?? null) : null,
      failure: v.failure,
      task: this.tasks.get(v.id) ?? null,
      call: sup ? { contextId: sup.contextId, toolCallId: sup.toolCallId, jobId: sup.jobId } : null,
      parallelCall: sup?.jobId ? (this.jobCalls.get(sup.jobId) ?? null) : null,
      lastRunStatus: v.lastRun?.status ?? null,
      startedAt: v.lastRun?.startedAt ?? null,
      endedAt: v.lastRun?.endedAt ?? null,
      inputTokens: u?.inputTokens ?? 0,
      outputTokens: u?.outputTokens ?? 0,
      modelCalls: u?.modelCalls ?? 0,
      treeTokens,
      remote: v.remote,
      createdPosition: v.createdPosition,
      position: v.position,
    };
  }
}
