// The audit of a context and everything it delegated, built from the log alone: a pure fold with a stable, documented shape.
//
// Requirements:
// - Every run of every context of the subtree, in order, with the message that started it, each model
//   call (reply, tool calls, usage, failure), each tool call (arguments, result or error, duration),
//   the parallel jobs and subordinates it started, interventions, warnings, pauses, and how it ended.
// - Each entry names the global position of the event it comes from, so it can be found in the log.
// - Durations come from `recorded_at`; tokens and counts are summed per context and over the subtree.
// - The shape is versioned by `format`; fields are only ever added (docs/cli.md documents it).
import type { TreeBudget } from "./budget.ts";
import type { ContextKind, RecordedEvent } from "../events/schema.ts";
import { auditRuns } from "./auditRuns.ts";
import { contextsProjection, type ContextStatus, type ContextView } from "./contexts.ts";
import { foldEvents } from "./projection.ts";

export { auditRuns };

export const AUDIT_FORMAT = 1;

export type Usage = { inputTokens: number; outputTokens: number };

export type SubordinateLink = {
  contextId: string;
  agentNumber: number | null;
  fresh: boolean;
  /** Null while the subordinate has not returned. */
  outcome: "completed" | "stopped" | "failed" | null;
  result: string | null;
  reason: string | null;
};

export type JobAudit = {
  jobId: string;
  toolName: string;
  arguments: unknown;
  status: "pending" | "running" | "success" | "error" | "cancelled" | "timeout" | "interrupted";
  result: string | null;
  error: string | null;
  contextId: string | null;
  subordinate: SubordinateLink | null;
};

export type Entry =
  | { kind: "message"; position: number; at: string; sender: "user" | "superior"; via?: "mcp" | "a2a"; text: string }
  | { kind: "intervention"; position: number; at: string; text: string }
  | {
      kind: "model_call";
      position: number;
      at: string;
      step: number;
      attempt: number;
      /** Made again after a restart cut off the step's last attempt (no reply or failure recorded): both may be billed. */
      madeAgain: boolean;
      model: string;
      outcome: "replied" | "failed" | "pending";
      durationMs: number | null;
      text: string | null;
      toolCalls: { id: string; name: string; arguments: unknown }[];
      usage: Usage | null;
      error: { reason: string; message: string; retryable: boolean } | null;
    }
  | { kind: "warning"; position: number; at: string; step: number; text: string }
  | {
      kind: "tool_call";
      position: number;
      at: string;
      step: number;
      toolCallId: string;
      name: string;
      arguments: unknown;
      outcome: "returned" | "failed" | "pending";
      durationMs: number | null;
      result: string | null;
      error: string | null;
      repairable: boolean | null;
      subordinate: SubordinateLink | null;
      jobs: JobAudit[];
    }
  | { kind: "paused" | "resumed"; position: number; at: string }
  /** A remote subordinate's run: the A2A task it sent (RemoteTaskSent) and, once the agent took it, its task id. */
  | {
      kind: "remote_task";
      position: number;
      at: string;
      url: string;
      skill: string | null;
      messageId: string;
      taskId: string | null;
      state: string | null;
    }
  | {
      /** Older history replaced by a summary in what the model is sent (HistoryCompacted); the log keeps the originals. */
      kind: "compaction";
      position: number;
      at: string;
      step: number;
      model: string;
      trigger: "threshold" | "endpoint";
      topics: number;
      elided: number;
      tokensBefore: number;
      tokensAfter: number;
      summary: string;
      usage: Usage | null;
      durationMs: number;
    };

export type RunAudit = {
  runId: string;
  /** `running` for a run with no end in the log (still going, or cut short by a crash not yet recorded). */
  status: "running" | "completed" | "stopped" | "failed" | "interrupted";
  model: string;
  requestedBy: { kind: "user" } | { kind: "superior"; contextId: string; toolCallId: string; jobId: string | null };
  message: string;
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  response: string | null;
  failure: { reason: string; message: string } | null;
  stoppedBy: "user" | "superior" | null;
  usage: Usage & { modelCalls: number; toolCalls: number };
  entries: Entry[];
  /** Positions of the run's first and last events. */
  positions: { first: number; last: number };
};

export type Totals = {
  contexts: number;
  runs: number;
  modelCalls: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Time spent in runs, summed (runs of a subtree overlap, so this can exceed the wall-clock time). */
  runTimeMs: number;
  stops: number;
  failures: number;
  interruptions: number;
  events: number;
};

export type ContextAudit = {
  id: string;
  name: string;
  profile: string;
  project: string | null;
  agentNumber: number;
  depth: number;
  kind: ContextKind;
  parentContextId: string | null;
  slot: string | null;
  status: ContextStatus;
  paused: boolean;
  createdAt: string;
  runs: RunAudit[];
  /** This context alone. */
  own: Totals;
  /** This context and everything below it. */
  tree: Totals;
  children: ContextAudit[];
};

export type AuditReport = {
  format: typeof AUDIT_FORMAT;
  /** The last log position the audit saw. */
  position: number;
  context: ContextAudit;
  /** The budget of the audited context's tree, as it stood at `position` (null: the tree has none). Set by auditLoad.ts. */
  budget?: TreeBudget | null;
};

const zero = (): Totals => ({
  contexts: 0,
  runs: 0,
  modelCalls: 0,
  toolCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  runTimeMs: 0,
  stops: 0,
  failures: 0,
  interruptions: 0,
  events: 0,
});

const add = (a: Totals, b: Totals): Totals => {
  const out = { ...a };
  for (const k of Object.keys(out) as (keyof Totals)[]) out[k] += b[k];
  return out;
};

const totalsOf = (runs: readonly RunAudit[], events: number): Totals => {
  const t = zero();
  t.contexts = 1;
  t.events = events;
  for (const r of runs) {
    t.runs++;
    t.modelCalls += r.usage.modelCalls;
    t.toolCalls += r.usage.toolCalls;
    t.inputTokens += r.usage.inputTokens;
    t.outputTokens += r.usage.outputTokens;
    t.runTimeMs += r.durationMs ?? 0;
    if (r.status === "stopped") t.stops++;
    if (r.status === "failed") t.failures++;
    if (r.status === "interrupted") t.interruptions++;
  }
  return t;
};

/**
 * The audit of `rootId` from `streams`: the events of the root's stream and of every context below it
 * (streams of other contexts are ignored).
 */
export const buildAudit = (rootId: string, streams: ReadonlyMap<string, readonly RecordedEvent[]>): AuditReport => {
  const views = new Map<string, ContextView>();
  for (const [id, events] of streams) {
    const folded = foldEvents(contextsProjection, events);
    const view = folded.get(id);
    if (view && view.createdPosition > 0) views.set(id, view);
  }
  const numbers = new Map([...views].map(([id, v]) => [id, v.agentNumber]));
  const kids = new Map<string, ContextView[]>();
  for (const v of views.values()) {
    if (!v.parentContextId) continue;
    const list = kids.get(v.parentContextId) ?? [];
    list.push(v);
    kids.set(v.parentContextId, list);
  }
  for (const list of kids.values()) list.sort((a, b) => a.createdPosition - b.createdPosition);

  const build = (view: ContextView): ContextAudit => {
    const stream = streams.get(view.id) ?? [];
    const runs = auditRuns(stream, numbers);
    const children = (kids.get(view.id) ?? []).map(build);
    const own = totalsOf(runs, stream.length);
    return {
      id: view.id,
      name: view.name,
      profile: view.profile,
      project: view.project,
      agentNumber: view.agentNumber,
      depth: view.depth,
      kind: view.kind,
      parentContextId: view.parentContextId,
      slot: view.slot,
      status: view.status,
      paused: view.paused,
      createdAt: view.createdAt,
      runs,
      own,
      tree: children.reduce((acc, c) => add(acc, c.tree), own),
      children,
    };
  };
  const root = views.get(rootId);
  if (!root) throw new Error(`no ContextCreated for ${rootId} among the streams given`);
  const position = Math.max(0, ...[...streams.values()].flatMap((s) => s.map((e) => e.globalPosition)));
  return { format: AUDIT_FORMAT, position, context: build(root) };
};
