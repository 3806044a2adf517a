// The figures of a set of runs in an audited tree: counts, tokens, wall time (first to last event) and busy time.
//
// Requirements:
// - A run's report counts only the runs that command started (this run), not the tree's whole life.
// - Elapsed is wall time from the first run's start to the last event of the runs; busy time sums the runs,
//   which overlap when subordinates run in parallel, so it is kept apart and named as such.
import type { ContextAudit, RunAudit, Totals } from "../projections/auditReport.ts";
import { count, duration, tokens } from "./format.ts";

/** The audit's counts for these runs, with wall time and busy time beside them. */
export type RunFigures = Pick<
  Totals,
  "contexts" | "runs" | "modelCalls" | "toolCalls" | "inputTokens" | "outputTokens"
> & {
  /** Wall time from the first run's start to the last event of any of them. */
  elapsedMs: number | null;
  /** Every run's duration, summed. */
  busyMs: number;
};

export type TreeRun = { context: ContextAudit; run: RunAudit };

/** Every run of the tree under `root`, with its context, in tree order. */
export const treeRuns = (root: ContextAudit): TreeRun[] => [
  ...root.runs.map((run) => ({ context: root, run })),
  ...root.children.flatMap(treeRuns),
];

const runEnd = (r: RunAudit): number => Date.parse(r.endedAt ?? r.entries.at(-1)?.at ?? r.startedAt);

export const figuresOf = (runs: readonly TreeRun[]): RunFigures => {
  const f: RunFigures = {
    contexts: new Set(runs.map((r) => r.context.id)).size,
    runs: runs.length,
    modelCalls: 0,
    toolCalls: 0,
    inputTokens: 0,
    outputTokens: 0,
    elapsedMs: null,
    busyMs: 0,
  };
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const { run } of runs) {
    f.modelCalls += run.usage.modelCalls;
    f.toolCalls += run.usage.toolCalls;
    f.inputTokens += run.usage.inputTokens;
    f.outputTokens += run.usage.outputTokens;
    f.busyMs += run.durationMs ?? 0;
    first = Math.min(first, Date.parse(run.startedAt));
    last = Math.max(last, runEnd(run));
  }
  if (Number.isFinite(first) && Number.isFinite(last)) f.elapsedMs = last - first;
  return f;
};

/** `1 model call`, `2 model calls`. */
export const plural = (n: number, word: string): string => `${count(n)} ${word}${n === 1 ? "" : "s"}`;

/** `4 contexts · 6 model calls · tokens 1,487 in / 551 out`. */
export const countsLine = (f: Pick<RunFigures, "contexts" | "modelCalls" | "inputTokens" | "outputTokens">): string =>
  [
    plural(f.contexts, "context"),
    plural(f.modelCalls, "model call"),
    `tokens ${tokens(f.inputTokens, f.outputTokens)}`,
  ].join(" · ");

/** `elapsed 1.03s (first to last event) · busy 1.94s (runs summed)`. */
export const timesLine = (f: RunFigures): string =>
  `elapsed ${duration(f.elapsedMs)} (first to last event) · busy ${duration(f.busyMs)} (runs summed)`;
