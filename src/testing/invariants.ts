// The lifecycle invariants (DESIGN §3–§5) as checks over a runtime's log and projections: each returns the violations it finds.
//
// Run them at rest (no run between two appends): `await assertInvariants(rt, { rootContextId })`.
// Pure checks take streams or views, so they also run over a log read any other way.
import type { Runtime } from "../runtime/runtime.ts";
import type { RecordedEvent } from "../events/schema.ts";
import { RUN_TERMINAL_TYPES } from "../events/schema.ts";
import type { ContextStatus, ContextView } from "../projections/contexts.ts";
import { foldSnapshot, type SnapshotRow } from "../projections/engine.ts";
import { contextsProjection } from "../projections/contexts.ts";
import { usageProjection } from "../projections/usage.ts";
import { treeProjection } from "../projections/tree.ts";
import { historyOf, transcriptProjection, type RunTranscript } from "../projections/transcript.ts";
import type { ChatMessage } from "../models/messages.ts";

export type InvariantName =
  | "log-shape"
  | "append-only"
  | "one-run-at-a-time"
  | "status-follows-lifecycle"
  | "numbers-and-depths"
  | "parent-links"
  | "no-run-outlives-its-superior"
  | "transcript"
  | "usage-rollup"
  | "rebuild-equals-live";

export type Violation = { invariant: InvariantName; contextId: string | null; detail: string };

/** Thrown by `assertInvariants`: every violation, one per line. */
export class InvariantViolation extends Error {
  constructor(readonly violations: Violation[]) {
    super(`${violations.length} invariant violation(s):\n${violations.map((v) => `  [${v.invariant}] ${v.contextId ? `${v.contextId}: ` : ""}${v.detail}`).join("\n")}`);
    this.name = "InvariantViolation";
  }
}

const terminalTypes: ReadonlySet<string> = new Set(RUN_TERMINAL_TYPES);
const isTerminal = (e: RecordedEvent) => terminalTypes.has(e.type);
const runIdOf = (e: RecordedEvent): string | null => {
  const d = e.data as { runId?: string | null };
  return typeof d.runId === "string" ? d.runId : null;
};
export const violation = (invariant: InvariantName, contextId: string | null, detail: string): Violation => ({ invariant, contextId, detail });
const v = violation;
export const at = (e: RecordedEvent) => `${e.type}@v${e.streamVersion}/p${e.globalPosition}`;

// ------------------------------------------------------------------------------------------ log shape

/**
 * Stream versions are 1..n with no gap, the first and only ContextCreated opens the stream and names
 * it, positions increase within a stream and are unique across streams.
 */
export const checkLogShape = (streams: ReadonlyMap<string, readonly RecordedEvent[]>): Violation[] => {
  const out: Violation[] = [];
  const seen = new Map<number, string>();
  for (const [id, events] of streams) {
    events.forEach((e, i) => {
      if (e.streamId !== id) out.push(v("log-shape", id, `${at(e)} belongs to stream ${e.streamId}`));
      if (e.streamVersion !== i + 1) out.push(v("log-shape", id, `${at(e)} is event #${i + 1} of its stream: versions must be 1..n with no gap`));
      if (i > 0 && e.globalPosition <= events[i - 1]!.globalPosition) out.push(v("log-shape", id, `${at(e)} does not come after ${at(events[i - 1]!)}`));
      if ((i === 0) !== (e.type === "ContextCreated")) out.push(v("log-shape", id, `${at(e)}: ContextCreated must be the first event and only the first`));
      if (e.type === "ContextCreated" && e.data.contextId !== id) out.push(v("log-shape", id, `ContextCreated names ${e.data.contextId}`));
      const other = seen.get(e.globalPosition);
      if (other !== undefined && other !== id) out.push(v("log-shape", id, `position ${e.globalPosition} is also used by stream ${other}`));
      seen.set(e.globalPosition, id);
    });
  }
  return out;
};

/**
 * What was read once is read again, unchanged, as a prefix: the log is append-only. Keep one
 * `LogMemory` across checks (`checkInvariants(rt, { memory })`).
 */
export class LogMemory {
  private readonly streams = new Map<string, { eventId: string; position: number; type: string }[]>();
  private readonly parents = new Map<string, string | null>();

  check(streams: ReadonlyMap<string, readonly RecordedEvent[]>): Violation[] {
    const out: Violation[] = [];
    for (const [id, events] of streams) {
      const before = this.streams.get(id) ?? [];
      if (events.length < before.length) out.push(v("append-only", id, `the stream shrank from ${before.length} to ${events.length} events`));
      before.forEach((b, i) => {
        const e = events[i];
        if (e && (e.eventId !== b.eventId || e.globalPosition !== b.position || e.type !== b.type)) {
          out.push(v("append-only", id, `event v${i + 1} changed: was ${b.type}@p${b.position} (${b.eventId}), now ${at(e)} (${e.eventId})`));
        }
      });
      this.streams.set(id, events.map((e) => ({ eventId: e.eventId, position: e.globalPosition, type: e.type })));
    }
    return out;
  }

  /** A context's parent, once seen, is the same forever. */
  checkParents(views: readonly ContextView[]): Violation[] {
    const out: Violation[] = [];
    for (const view of views) {
      if (this.parents.has(view.id) && this.parents.get(view.id) !== view.parentContextId) {
        out.push(v("parent-links", view.id, `parent changed from ${this.parents.get(view.id)} to ${view.parentContextId}`));
      }
      this.parents.set(view.id, view.parentContextId);
    }
    return out;
  }
}

// ------------------------------------------------------------------------------------------ runs

/**
 * Per stream, RunStarted and terminal events alternate: a context never runs twice at once, every run
 * ends exactly once (RunCompleted, RunStopped, RunFailed, or RunInterrupted after a crash), and
 * nothing of a run is recorded before it started (its MessageReceived aside) or after it ended.
 * The last run may still be open; `openRunOf` says which.
 */
export const checkOneRunAtATime = (contextId: string, stream: readonly RecordedEvent[]): Violation[] => {
  const out: Violation[] = [];
  const ended = new Set<string>();
  let open: string | null = null;
  stream.forEach((e, i) => {
    const runId = runIdOf(e);
    if (e.type === "RunStarted") {
      if (open !== null) out.push(v("one-run-at-a-time", contextId, `${at(e)} starts run ${runId} while run ${open} is still running`));
      if (ended.has(e.data.runId)) out.push(v("one-run-at-a-time", contextId, `${at(e)} starts run ${runId} again`));
      open = e.data.runId;
      return;
    }
    if (isTerminal(e)) {
      if (runId !== open) {
        const why = runId !== null && ended.has(runId) ? "which had already ended" : "which was not running";
        out.push(v("one-run-at-a-time", contextId, `${at(e)} ends run ${runId}, ${why}`));
      } else open = null;
      if (runId !== null) ended.add(runId);
      return;
    }
    if (runId === null || runId === open) return;
    const next = stream[i + 1];
    if (e.type === "MessageReceived" && next?.type === "RunStarted" && next.data.runId === runId) return;
    out.push(v("one-run-at-a-time", contextId, `${at(e)} belongs to run ${runId}, which ${ended.has(runId) ? "had ended" : "was not running"}`));
  });
  return out;
};

/** The run a stream leaves open (started, not ended), if any. */
export const openRunOf = (stream: readonly RecordedEvent[]): RecordedEvent & { type: "RunStarted" } | null => {
  let open: (RecordedEvent & { type: "RunStarted" }) | null = null;
  for (const e of stream) {
    if (e.type === "RunStarted") open = e;
    else if (isTerminal(e) && open && runIdOf(e) === open.data.runId) open = null;
  }
  return open;
};

export type Lifecycle = { status: ContextStatus; paused: boolean; currentRunId: string | null; failureReason: string | null };

/**
 * DESIGN §4 restated as a fold, independent of the projections: idle → running on RunStarted; running →
 * idle / stopped / failed on RunCompleted / RunStopped / RunFailed or RunInterrupted; `paused` is set
 * by ContextPaused and cleared by any new message, an intervention, a resume, or a stop.
 */
export const lifecycleOf = (stream: readonly RecordedEvent[]): Lifecycle => {
  let s: Lifecycle = { status: "idle", paused: false, currentRunId: null, failureReason: null };
  for (const e of stream) {
    switch (e.type) {
      case "RunStarted":
        s = { ...s, status: "running", currentRunId: e.data.runId, failureReason: null };
        break;
      case "RunCompleted":
        s = { ...s, status: "idle", currentRunId: null, failureReason: null };
        break;
      case "RunStopped":
        s = { ...s, status: "stopped", paused: false, currentRunId: null, failureReason: null };
        break;
      case "RunFailed":
        s = { ...s, status: "failed", currentRunId: null, failureReason: e.data.reason };
        break;
      case "RunInterrupted":
        s = { ...s, status: "failed", currentRunId: null, failureReason: "interrupted" };
        break;
      case "ContextPaused":
        s = { ...s, paused: true };
        break;
      case "ContextResumed":
      case "MessageReceived":
      case "InterventionReceived":
        s = { ...s, paused: false };
        break;
      default:
        break;
    }
  }
  return s;
};

/** The projection's status, pause flag, current run and failure equal the fold of §4 over the stream. */
export const checkStatus = (view: ContextView, stream: readonly RecordedEvent[]): Violation[] => {
  const want = lifecycleOf(stream);
  const got: Lifecycle = { status: view.status, paused: view.paused, currentRunId: view.currentRunId, failureReason: view.failure?.reason ?? null };
  const diffs = (Object.keys(want) as (keyof Lifecycle)[]).filter((k) => want[k] !== got[k]);
  return diffs.length === 0
    ? []
    : [v("status-follows-lifecycle", view.id, diffs.map((k) => `${k} is ${JSON.stringify(got[k])}, the log says ${JSON.stringify(want[k])}`).join("; "))];
};

/**
 * A run called by a superior (RunStarted.superior) never outlives the superior's run: it starts while
 * that run is open, and when the superior's run is stopped, completed or failed, it has already ended.
 * (A crash may leave both open; RunInterrupted then closes them in any order, so for it only the end
 * state counts: no run is left open under an ended superior run.)
 */
export const checkNoRunOutlivesItsSuperior = (events: readonly RecordedEvent[]): Violation[] => {
  const out: Violation[] = [];
  const sorted = [...events].sort((a, b) => a.globalPosition - b.globalPosition);
  const openRuns = new Map<string, { contextId: string; superiorRunId: string | null }>();
  const endedRuns = new Set<string>();
  for (const e of sorted) {
    if (e.type === "RunStarted") {
      const sup = e.data.superior;
      if (sup && !openRuns.has(sup.runId)) {
        out.push(v("no-run-outlives-its-superior", e.streamId, `${at(e)} starts a run for superior run ${sup.runId} of ${sup.contextId}, which is not running`));
      }
      openRuns.set(e.data.runId, { contextId: e.streamId, superiorRunId: sup?.runId ?? null });
    } else if (isTerminal(e)) {
      const runId = runIdOf(e)!;
      openRuns.delete(runId);
      endedRuns.add(runId);
      if (e.type === "RunInterrupted") continue;
      for (const [childRun, r] of openRuns) {
        if (r.superiorRunId === runId) {
          out.push(v("no-run-outlives-its-superior", r.contextId, `run ${childRun} is still running when its superior's run ended (${at(e)} in ${e.streamId})`));
        }
      }
    }
  }
  for (const [childRun, r] of openRuns) {
    if (r.superiorRunId !== null && endedRuns.has(r.superiorRunId)) {
      out.push(v("no-run-outlives-its-superior", r.contextId, `run ${childRun} is still running, but its superior's run ${r.superiorRunId} has ended`));
    }
  }
  return out;
};

// ------------------------------------------------------------------------------------------ the tree

/**
 * A root is A0 at depth 0 and its own root; a child is its parent's number + 1 at depth + 1, records
 * the parent's number, and shares its root.
 */
export const checkNumbersAndDepths = (views: readonly ContextView[]): Violation[] => {
  const out: Violation[] = [];
  const byId = new Map(views.map((c) => [c.id, c]));
  for (const c of views) {
    if (c.parentContextId === null) {
      if (c.agentNumber !== 0 || c.depth !== 0 || c.kind !== "root" || c.rootContextId !== c.id) {
        out.push(v("numbers-and-depths", c.id, `a root must be A0 at depth 0, its own root; it is A${c.agentNumber} at depth ${c.depth}, kind ${c.kind}, root ${c.rootContextId}`));
      }
      continue;
    }
    const p = byId.get(c.parentContextId);
    if (!p) {
      out.push(v("numbers-and-depths", c.id, `its parent ${c.parentContextId} is not in the tree`));
      continue;
    }
    const problems: string[] = [];
    if (c.agentNumber !== p.agentNumber + 1) problems.push(`number A${c.agentNumber} under A${p.agentNumber}`);
    if (c.depth !== p.depth + 1) problems.push(`depth ${c.depth} under depth ${p.depth}`);
    if (c.parentAgentNumber !== p.agentNumber) problems.push(`records parent number ${c.parentAgentNumber}, the parent is A${p.agentNumber}`);
    if (c.rootContextId !== p.rootContextId) problems.push(`root ${c.rootContextId}, the parent's is ${p.rootContextId}`);
    if (c.kind !== "subordinate" && c.kind !== "remote") problems.push(`kind ${c.kind}`);
    if (problems.length > 0) out.push(v("numbers-and-depths", c.id, problems.join("; ")));
  }
  return out;
};

/** The view's parent is the one ContextCreated recorded, and the tree lists each child under that parent only. */
export const checkParentLinks = (
  views: readonly ContextView[],
  streams: ReadonlyMap<string, readonly RecordedEvent[]>,
  childrenOf: ReadonlyMap<string, readonly string[]>,
): Violation[] => {
  const out: Violation[] = [];
  for (const c of views) {
    const created = streams.get(c.id)?.[0];
    if (created?.type === "ContextCreated" && created.data.parentContextId !== c.parentContextId) {
      out.push(v("parent-links", c.id, `the view's parent is ${c.parentContextId}, ContextCreated says ${created.data.parentContextId}`));
    }
    const listed = [...childrenOf].filter(([, kids]) => kids.includes(c.id)).map(([p]) => p);
    const want = c.parentContextId === null ? [] : [c.parentContextId];
    if (JSON.stringify(listed) !== JSON.stringify(want)) out.push(v("parent-links", c.id, `listed as a child of [${listed.join(", ")}], its parent is ${c.parentContextId}`));
  }
  return out;
};

// ------------------------------------------------------------------------------------------ transcripts

/** Interventions a later model call (or the run's end) delivered; the rest still wait. */
const deliveredTexts = (stream: readonly RecordedEvent[]): string[] => {
  const out: string[] = [];
  let pending: string[] = [];
  for (const e of stream) {
    if (e.type === "MessageReceived") out.push(e.data.text);
    else if (e.type === "InterventionReceived") pending.push(e.data.text);
    else if (e.type === "ModelCalled" || isTerminal(e)) {
      out.push(...pending);
      pending = [];
    }
  }
  return out;
};

/**
 * The history holds every message and delivered intervention once, in log order (warnings aside), and
 * every assistant tool call is answered by exactly one tool message right after it (the current run's
 * last step may still be waiting for its answers).
 */
export const checkTranscript = (contextId: string, stream: readonly RecordedEvent[], history: readonly ChatMessage[]): Violation[] => {
  const out: Violation[] = [];
  const warnings = new Set(stream.flatMap((e) => (e.type === "ModelWarned" ? [e.data.text] : [])));
  const want = deliveredTexts(stream);
  const got = history.flatMap((m) => (m.role === "user" && !warnings.has(m.content) ? [m.content] : []));
  if (JSON.stringify(want) !== JSON.stringify(got)) {
    out.push(v("transcript", contextId, `user messages are ${JSON.stringify(got).slice(0, 300)}, the log recorded ${JSON.stringify(want).slice(0, 300)}`));
  }
  const running = openRunOf(stream) !== null;
  for (let i = 0; i < history.length; i++) {
    const m = history[i]!;
    if (m.role === "tool" && (i === 0 || (history[i - 1]!.role !== "tool" && history[i - 1]!.role !== "assistant"))) {
      out.push(v("transcript", contextId, `tool message ${m.tool_call_id} at #${i} follows no assistant message`));
    }
    if (m.role !== "assistant" || !m.tool_calls?.length) continue;
    const answers: string[] = [];
    let j = i + 1;
    for (; j < history.length && history[j]!.role === "tool"; j++) answers.push((history[j] as { tool_call_id: string }).tool_call_id);
    const asked = m.tool_calls.map((c) => c.id);
    const tail = j === history.length && running;
    const same = JSON.stringify([...asked].sort()) === JSON.stringify([...answers].sort());
    if (!same && !(tail && answers.every((a) => asked.includes(a)))) {
      out.push(v("transcript", contextId, `assistant message #${i} asked [${asked.join(", ")}], answered [${answers.join(", ")}]`));
    }
  }
  return out;
};
