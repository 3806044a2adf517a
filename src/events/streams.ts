// The log's streams by kind, told apart by their ids: a context's own stream is its id; a request to the process
// that drives a context's run is in `<contextId>:control`; a tree's budget in `<rootContextId>:budget`.
//
// Requirements:
// - The kind follows from the id alone (no column, no lookup), so every log ever written replays as it was.
// - A control stream holds RunControlRequested and nothing else, and a context's stream never holds one: readers
//   that fold contexts (projections, audits, live views) leave control streams out before their folds.

export type StreamKind = "context" | "control" | "budget";

const CONTROL_SUFFIX = ":control";
const BUDGET_SUFFIX = ":budget";

/** The stream a stop, pause or resume of `contextId`'s run is asked in (only the driver writes the context's own). */
export const controlStreamOf = (contextId: string): string => `${contextId}${CONTROL_SUFFIX}`;

export const streamKindOf = (streamId: string): StreamKind =>
  streamId.endsWith(CONTROL_SUFFIX) ? "control" : streamId.endsWith(BUDGET_SUFFIX) ? "budget" : "context";
