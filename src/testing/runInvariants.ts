// The run invariants: one run at a time per context, a status that follows the lifecycle, and no run
// outliving its superior's run.
import type { RecordedEvent } from "../events/schema.ts";
import type { ContextStatus, ContextView } from "../projections/contexts.ts";
import { at, isTerminal, runIdOf, violation as v, type Violation } from "./invariants.ts";

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
      if (open !== null)
        out.push(v("one-run-at-a-time", contextId, `${at(e)} starts run ${runId} while run ${open} is still running`));
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
    out.push(
      v(
        "one-run-at-a-time",
        contextId,
        `${at(e)} belongs to run ${runId}, which ${ended.has(runId) ? "had ended" : "was not running"}`,
      ),
    );
  });
  return out;
};

/** The run a stream leaves open (started, not ended), if any. */
export const openRunOf = (stream: readonly RecordedEvent[]): (RecordedEvent & { type: "RunStarted" }) | null => {
  let open: (RecordedEvent & { type: "RunStarted" }) | null = null;
  for (const e of stream) {
    if (e.type === "RunStarted") open = e;
    else if (isTerminal(e) && open && runIdOf(e) === open.data.runId) open = null;
  }
  return open;
};

export type Lifecycle = {
  status: ContextStatus;
  paused: boolean;
  currentRunId: string | null;
  failureReason: string | null;
};

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
  const got: Lifecycle = {
    status: view.status,
    paused: view.paused,
    currentRunId: view.currentRunId,
    failureReason: view.failure?.reason ?? null,
  };
  const diffs = (Object.keys(want) as (keyof Lifecycle)[]).filter((k) => want[k] !== got[k]);
  return diffs.length === 0
    ? []
    : [
        v(
          "status-follows-lifecycle",
          view.id,
          diffs.map((k) => `${k} is ${JSON.stringify(got[k])}, the log says ${JSON.stringify(want[k])}`).join("; "),
        ),
      ];
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
        out.push(
          v(
            "no-run-outlives-its-superior",
            e.streamId,
            `${at(e)} starts a run for superior run ${sup.runId} of ${sup.contextId}, which is not running`,
          ),
        );
      }
      openRuns.set(e.data.runId, { contextId: e.streamId, superiorRunId: sup?.runId ?? null });
    } else if (isTerminal(e)) {
      const runId = runIdOf(e)!;
      openRuns.delete(runId);
      endedRuns.add(runId);
      if (e.type === "RunInterrupted") continue;
      for (const [childRun, r] of openRuns) {
        if (r.superiorRunId === runId) {
          out.push(
            v(
              "no-run-outlives-its-superior",
              r.contextId,
              `run ${childRun} is still running when its superior's run ended (${at(e)} in ${e.streamId})`,
            ),
          );
        }
      }
    }
  }
  for (const [childRun, r] of openRuns) {
    if (r.superiorRunId !== null && endedRuns.has(r.superiorRunId)) {
      out.push(
        v(
          "no-run-outlives-its-superior",
          r.contextId,
          `run ${childRun} is still running, but its superior's run ${r.superiorRunId} has ended`,
        ),
      );
    }
  }
  return out;
};
