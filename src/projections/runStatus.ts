// The one status fold (facts → status): which facts start and end a run, how each ends it, and the
// words people read about that end. The context machine's guards, the projections, `send`'s outcome
// and the CLI all read a run's end here, so they cannot drift apart.
//
// Requirements:
// - Pure: a fact in, a status or an end out; no clock, no I/O.
// - RunStarted makes a context `running`; each terminal fact makes it what that end means:
//   RunCompleted → idle, RunStopped → stopped, RunFailed and RunInterrupted → failed.
// - A run that ended unfinished reads the same everywhere: reason `interrupted`, INTERRUPTED_MESSAGE,
//   or, when its own end was refused by the store, that refusal's words.
import type { DomainEvent, RecordedEvent, RunFailureReason } from "../events/schema.ts";

/** A context's lifecycle status, as the log says it. */
export type ContextStatus = "idle" | "running" | "stopped" | "failed";
/** One run's status: running, or how it ended. */
export type RunStatus = "running" | "completed" | "stopped" | "failed" | "interrupted";

export const INTERRUPTED_MESSAGE = "The run did not finish: it was found unfinished when the log was opened.";

/** The words of an interrupted run whose own end the store refused, with why. */
export const unrecordedMessage = (reason: string): string =>
  `The run did not finish: its end could not be recorded (${reason}).`;

/** How one run ended, as its terminal fact records it. */
export type RunEnd = {
  runId: string;
  /** How the run ended. */
  run: Exclude<RunStatus, "running">;
  /** The context's status once it ended. */
  status: Exclude<ContextStatus, "running">;
  response: string | null;
  failure: { reason: RunFailureReason; message: string } | null;
  stoppedBy: "user" | "superior" | null;
};

/** The end a terminal fact (recorded, or about to be) records, or null for any other fact. */
export const runEndOf = (f: DomainEvent): RunEnd | null => {
  const base = { runId: "", response: null, failure: null, stoppedBy: null };
  switch (f.type) {
    case "RunCompleted":
      return { ...base, runId: f.data.runId, run: "completed", status: "idle", response: f.data.response };
    case "RunStopped":
      return { ...base, runId: f.data.runId, run: "stopped", status: "stopped", stoppedBy: f.data.by };
    case "RunFailed":
      return {
        ...base,
        runId: f.data.runId,
        run: "failed",
        status: "failed",
        failure: { reason: f.data.reason, message: f.data.message },
      };
    case "RunInterrupted":
      return {
        ...base,
        runId: f.data.runId,
        run: "interrupted",
        status: "failed",
        failure: {
          reason: "interrupted",
          message: f.data.reason === undefined ? INTERRUPTED_MESSAGE : unrecordedMessage(f.data.reason),
        },
      };
    default:
      return null;
  }
};

/** The fold: a context's status after one more fact. */
export const statusAfter = (status: ContextStatus, f: RecordedEvent): ContextStatus =>
  f.type === "RunStarted" ? "running" : (runEndOf(f)?.status ?? status);

/** The status `facts` leave a context in that was `from` before them. */
export const statusOf = (facts: readonly RecordedEvent[], from: ContextStatus = "idle"): ContextStatus =>
  facts.reduce(statusAfter, from);
