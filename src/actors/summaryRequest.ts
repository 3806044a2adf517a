// The summary request of a compaction: the topics to summarise as text, cut into chunks that each fit the model's
// window with the running summary, and the summary held to its cap. Pure, so the fitting is property-tested.
//
// Requirements:
// - Every summary request (instructions, the running summary at its cap, one chunk, the reserved reply) fits the
//   window: the topics are chunked, and a single message too long for a chunk is cut into pieces.
// - The summary of earlier topics goes into the first request, so a new summary stands for everything covered.
// - A reply longer than the cap is cut to it: the planner counted the summary at its cap.
import type { ChatMessage } from "../models/messages.ts";
import type { Topic } from "../projections/topics.ts";
import { type Counter, summaryCap, type WindowSettings } from "./windowPlan.ts";

/** The system prompt of every summary request (an endpoint can tell a summary request by it). */
export const SUMMARY_INSTRUCTIONS =
  "You compact a conversation history so it fits a model's context window. Write a short, factual summary of it: " +
  "the requests made, what was decided and done, results and names that later turns may need. Plain text, no preamble.";

const SO_FAR = "Summary so far:\n";
const TO_ADD = "\n\nConversation to add to the summary:\n";

/** The messages of one summary request. */
export const summaryPrompt = (running: string | null, chunk: string): ChatMessage[] => [
  { role: "system", content: SUMMARY_INSTRUCTIONS },
  { role: "user", content: `${running === null ? "" : `${SO_FAR}${running}`}${TO_ADD}${chunk}` },
];

const line = (m: ChatMessage): string => {
  switch (m.role) {
    case "system":
    case "user":
      return `[${m.role}] ${m.content}`;
    case "assistant": {
      const calls = (m.tool_calls ?? []).map((c) => `${c.function.name}(${c.function.arguments})`).join(", ");
      return `[assistant] ${m.content ?? ""}${calls ? ` calls ${calls}` : ""}`;
    }
    case "tool":
      return `[result of ${m.tool_call_id}] ${m.content}`;
  }
};

/** The topics as lines of text, one per message. */
export const renderTopics = (topics: readonly Topic[]): string[] => topics.flatMap((t) => t.messages.map(line));

/** `text` cut (at character boundaries) into pieces of at most `budget` tokens each. */
export const splitToFit = (text: string, budget: number, counter: Counter): string[] => {
  if (counter.text(text) <= budget) return [text];
  const chars = Array.from(text);
  if (chars.length <= 1) return [text];
  const half = Math.ceil(chars.length / 2);
  return [
    ...splitToFit(chars.slice(0, half).join(""), budget, counter),
    ...splitToFit(chars.slice(half).join(""), budget, counter),
  ];
};

/** The tokens a summary request for `chunk` costs, with the running summary at its cap and the reply reserved. */
const requestCost = (chunk: string, w: WindowSettings, counter: Counter): number => {
  const cap = summaryCap(w);
  return counter.request({ messages: summaryPrompt("", chunk), tools: [] }) + counter.text(SO_FAR) + 2 * cap;
};

/**
 * The chunks of text the topics are summarised in, in order; each request for one fits the window.
 * Throws when not even an empty chunk fits (a window smaller than the instructions and two summaries).
 */
export const summaryChunks = (topics: readonly Topic[], w: WindowSettings, counter: Counter): string[] => {
  const room = w.contextWindow - requestCost("", w, counter);
  if (room < 16) throw new Error(`A context window of ${w.contextWindow} tokens leaves no room for a summary request.`);
  const chunks: string[] = [];
  let current: string[] = [];
  let used = 0;
  const flush = () => {
    if (current.length > 0) chunks.push(current.join("\n"));
    current = [];
    used = 0;
  };
  // Each piece gets a margin of a few tokens: joining pieces can merge tokens across the newline only downwards,
  // but the sum is checked against the room on the joined text anyway.
  for (const text of renderTopics(topics)) {
    for (const piece of splitToFit(text, room - 8, counter)) {
      const tokens = counter.text(piece) + 2;
      if (used + tokens > room && current.length > 0) flush();
      current.push(piece);
      used += tokens;
    }
  }
  flush();
  // The sum above is an estimate of the joined text; a chunk it undercounted is split again.
  return chunks.flatMap((c) =>
    requestCost(c, w, counter) <= w.contextWindow ? [c] : splitToFit(c, room - 8, counter),
  );
};

/** `summary` held to `cap` tokens (cut at a character boundary when longer). */
export const capSummary = (summary: string, cap: number, counter: Counter): string => {
  let text = summary.trim();
  while (text.length > 0 && counter.text(text) > cap) {
    const chars = Array.from(text);
    text = chars.slice(0, Math.max(0, Math.floor(chars.length * Math.min(0.9, cap / counter.text(text))))).join("");
  }
  return text;
};
