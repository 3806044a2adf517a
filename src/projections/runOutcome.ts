// How one run ended, folded from its terminal fact: the one wording callers, the CLI and the projections share.
import type { RecordedEvent } from "../events/schema.ts";
import { INTERRUPTED_MESSAGE } from "./contexts.ts";

export type RunOutcome = {
  runId: string;
  status: "completed" | "stopped" | "failed";
  response: string | null;
  failure: { reason: string; message: string } | null;
};

/** The outcome a terminal fact records, or null for any other fact. */
export const outcomeOf = (f: RecordedEvent): RunOutcome | null => {
  switch (f.type) {
    case "RunCompleted":
      return { runId: f.data.runId, status: "completed", response: f.data.response, failure: null };
    case "RunStopped":
      return { runId: f.data.runId, status: "stopped", response: null, failure: null };
    case "RunFailed":
      return { runId: f.data.runId, status: "failed", response: null, failure: { reason: f.data.reason, message: f.data.message } };
    case "RunInterrupted":
      return { runId: f.data.runId, status: "failed", response: null, failure: { reason: "interrupted", message: INTERRUPTED_MESSAGE } };
    default:
      return null;
  }
};
