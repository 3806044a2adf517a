// How a context's state is named and coloured everywhere in the CLI.
import type { Paint } from "./ansi.ts";
import type { ContextView } from "../projections/contexts.ts";

/** `completed`, `stopped`, `failed`, `interrupted`, `running`, or `idle` (never ran). */
export type Shown = "idle" | "running" | "completed" | "stopped" | "failed" | "interrupted";

/** A context's state as people say it: an idle context shows how its last run ended. */
export const shownStatus = (view: Pick<ContextView, "status" | "lastRun" | "failure">): Shown => {
  if (view.status === "running") return "running";
  if (view.status === "failed") return view.failure?.reason === "interrupted" ? "interrupted" : "failed";
  if (view.status === "stopped") return "stopped";
  return view.lastRun?.status === "completed" ? "completed" : "idle";
};

/** What a running context is waiting on, after its status: " (paused)", " (awaiting approval)", " (parked: budget)", " (queued)", or nothing. */
export const statusNote = (
  view: Pick<ContextView, "status" | "paused" | "awaitingApproval"> & {
    parkedOnBudget?: ContextView["parkedOnBudget"];
    queued?: boolean;
  },
  paint: Paint,
): string =>
  view.status === "running" && view.parkedOnBudget
    ? paint.yellow(` (parked: ${view.parkedOnBudget.limit} budget)`)
    : view.status === "running" && view.awaitingApproval.length > 0
      ? paint.yellow(" (awaiting approval)")
      : view.paused
        ? paint.yellow(" (paused)")
        : view.status === "running" && view.queued
          ? paint.yellow(" (queued)")
          : "";

export const paintStatus = (status: string, paint: Paint): string => {
  switch (status) {
    case "running":
      return paint.cyan(status);
    case "completed":
    case "success":
      return paint.green(status);
    case "stopped":
    case "cancelled":
    case "interrupted":
    case "timeout":
      return paint.yellow(status);
    case "failed":
    case "error":
      return paint.red(status);
    default:
      return paint.dim(status);
  }
};
