// Topics and the model's view of a history: each run of a context is a topic, sealed when its run ends;
// a HistoryCompacted stands in for the topics it covers (one summary message) and for the tool results it elided.
//
// Requirements:
// - A pure function of the runs' transcripts (the log's folds): a resumed run and a rebuilt transcript see the
//   same view, byte for byte; the summary is read from the log, never asked again.
// - The latest compaction wins: each one covers every topic an earlier one covered (the summary of a summary).
// - Covered topics are always whole runs, so no tool call is ever parted from its result; an elided result keeps
//   its place (and its tool_call_id), only its text becomes a note naming the fact that holds the whole output.
// - `full`: every original message, no summary and no note (what `rt.history(id, { full: true })` returns).
import type { ChatMessage } from "../models/messages.ts";
import type { RunTranscript } from "./transcript.ts";

/** The summary as the model reads it: the first message after the system prompt. */
export const SUMMARY_PREFIX = "Summary of the earlier conversation (its full messages are kept in the log):\n\n";

export const summaryMessage = (summary: string): ChatMessage => ({
  role: "user",
  content: `${SUMMARY_PREFIX}${summary}`,
});

/** What an elided tool result reads as: its size, and where the whole output is. */
export const elidedNote = (runId: string, toolCallId: string, tokens: number): string =>
  `[Output elided to fit the context window (${tokens} tokens). The whole output is in the log: the result of tool call ${toolCallId} in run ${runId}.]`;

/** One topic as the model sees it (elided results as notes). */
export type Topic = { runId: string; firstPosition: number; sealed: boolean; messages: ChatMessage[] };

/** The history split as compaction needs it: the standing summary, the topics it covers, and the rest in order. */
export type TopicView = { summary: string | null; covered: string[]; topics: Topic[] };

const ordered = (runs: Iterable<RunTranscript>): RunTranscript[] =>
  [...runs].sort((a, b) => a.firstPosition - b.firstPosition);

const latestCompaction = (runs: readonly RunTranscript[]) => {
  let latest: NonNullable<RunTranscript["compaction"]> | null = null;
  for (const r of runs)
    if (r.compaction && (latest === null || r.compaction.position > latest.position)) latest = r.compaction;
  return latest;
};

/** A run's messages with its elided results replaced by their notes. */
export const viewOfRun = (r: RunTranscript): ChatMessage[] => {
  const elided = r.elided;
  if (!elided || elided.length === 0) return r.messages;
  const tokensOf = new Map(elided.map((e) => [e.toolCallId, e.tokens]));
  return r.messages.map((m) => {
    if (m.role !== "tool") return m;
    const tokens = tokensOf.get(m.tool_call_id);
    return tokens === undefined ? m : { ...m, content: elidedNote(r.runId, m.tool_call_id, tokens) };
  });
};

/** The topics of a context, as the model sees them. */
export const topicsOf = (runs: Iterable<RunTranscript>): TopicView => {
  const all = ordered(runs);
  const latest = latestCompaction(all);
  const covered = new Set(latest?.topics ?? []);
  return {
    summary: latest?.summary ?? null,
    covered: [...covered],
    topics: all
      .filter((r) => !covered.has(r.runId))
      .map((r) => ({
        runId: r.runId,
        firstPosition: r.firstPosition,
        sealed: r.sealed === true,
        messages: viewOfRun(r),
      })),
  };
};

/** The messages of a topic view in request order (without the system prompt). */
export const messagesOf = (view: TopicView): ChatMessage[] => [
  ...(view.summary === null ? [] : [summaryMessage(view.summary)]),
  ...view.topics.flatMap((t) => t.messages),
];

/**
 * The runs of one context concatenated in order: what the next model call is sent (without the system prompt),
 * or with `full` every original message.
 */
export const historyOf = (runs: Iterable<RunTranscript>, options: { full?: boolean } = {}): ChatMessage[] =>
  options.full ? ordered(runs).flatMap((r) => r.messages) : messagesOf(topicsOf(runs));
