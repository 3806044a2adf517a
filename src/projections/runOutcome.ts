// How one run ended, as `send` answers it: the status fold's end of the run (runStatus.ts), in the caller's words.
import type { RecordedEvent } from "../events/schema.ts";
import { type RunEnd, runEndOf } from "./runStatus.ts";

export type RunOutcome = {
  runId: string;
  status: "completed" | "stopped" | "failed";
  response: string | null;
  failure: { reason: string; message: string } | null;
};

/** The outcome of a run's end: an interrupted run is a failed one, with reason `interrupted`. */
export const outcomeOfEnd = (end: RunEnd): RunOutcome => ({
  runId: end.runId,
  status: end.run === "interrupted" ? "failed" : end.run,
  response: end.response,
  failure: end.failure,
});

/** The outcome a terminal fact records, or null for any other fact. */
export const outcomeOf = (f: RecordedEvent): RunOutcome | null => {
  const end = runEndOf(f);
  return end ? outcomeOfEnd(end) : null;
};
