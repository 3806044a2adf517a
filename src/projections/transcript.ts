// The `transcript` projection: a context's messages exactly as the model is sent them (chat shape, no system prompt).
// Each key is one run, which is one topic (topics.ts): sealed when the run ends; a HistoryCompacted recorded in a run
// keeps the summary and the elided results there, and topics.ts builds the model's view from them.
import type { DomainEvent, RecordedEvent } from "../events/schema.ts";
import { argumentsAsString, type ChatMessage, type ChatToolCall } from "../models/messages.ts";
import { defineProjection, foldEvents, onceByPositionFresh, readsEvents } from "./projection.ts";
import { historyOf } from "./topics.ts";

/**
 * One run of one context: the cost of saving a step is bounded by the run's length, not the history's.
 * Interventions wait in `pending` until the run's next model call (or its end) delivers them.
 */
export type RunTranscript = {
  contextId: string;
  runId: string;
  messages: ChatMessage[];
  pending: string[];
  /** Position of the first event of this run: runs are concatenated in this order. */
  firstPosition: number;
  position: number;
  /** The run ended: its topic is sealed and may be summarised. */
  sealed?: boolean;
  /** The latest compaction recorded in this run: the topics (runs) its summary stands for. */
  compaction?: { position: number; topics: string[]; summary: string } | null;
  /** Tool results of this run that compaction replaced by a note (topics.ts `elidedNote`). */
  elided?: { toolCallId: string; tokens: number }[];
};

/** The tool result given to a tool call the run never finished, so the next request is valid. */
export const NOT_RUN_RESULT = "(not run: the run ended before this tool call finished)";

/** `<contextId>/<runId>`, each part URI-encoded so no two pairs share a key. */
export const transcriptKey = (contextId: string, runId: string): string => `${keyPart(contextId)}/${keyPart(runId)}`;

/** Ids of letters, digits and `-` (uuids) are their own encoding: skip the call, it runs for every event of a fold. */
const UNRESERVED = /^[A-Za-z0-9-]*$/;
const keyPart = (s: string): string => (UNRESERVED.test(s) ? s : encodeURIComponent(s));

export const initRunTranscript = (key: string): RunTranscript => {
  const [c = "", r = ""] = key.split("/");
  return {
    contextId: decodeURIComponent(c),
    runId: decodeURIComponent(r),
    messages: [],
    pending: [],
    firstPosition: 0,
    position: 0,
  };
};

const flush = (t: RunTranscript): RunTranscript =>
  t.pending.length === 0
    ? t
    : {
        ...t,
        messages: [...t.messages, ...t.pending.map((content): ChatMessage => ({ role: "user", content }))],
        pending: [],
      };

const closeDangling = (t: RunTranscript): RunTranscript => {
  const answered = new Set(t.messages.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : [])));
  const closing: ChatMessage[] = [];
  for (const m of t.messages) {
    if (m.role !== "assistant" || !m.tool_calls) continue;
    for (const call of m.tool_calls) {
      if (answered.has(call.id)) continue;
      answered.add(call.id);
      closing.push({ role: "tool", tool_call_id: call.id, content: NOT_RUN_RESULT });
    }
  }
  return closing.length === 0 ? t : { ...t, messages: [...t.messages, ...closing] };
};

const add = (t: RunTranscript, m: ChatMessage): RunTranscript => ({ ...t, messages: [...t.messages, m] });

/**
 * The message a fact of a step adds to the transcript as it stands (a tool's result, a warning), or null: the same
 * the fold adds, so a fact not on the log yet (staged) can be counted as it will be sent.
 */
export const stepMessageOf = (event: DomainEvent): ChatMessage | null => {
  switch (event.type) {
    case "ToolReturned":
      return { role: "tool", tool_call_id: event.data.toolCallId, content: event.data.result };
    case "ToolFailed":
      return { role: "tool", tool_call_id: event.data.toolCallId, content: event.data.error };
    case "ModelWarned":
      return { role: "user", content: event.data.text };
    default:
      return null;
  }
};

// A run cut short (stopped, failed, interrupted) closes its dangling calls before the interventions: tool results must
// directly follow their assistant message.
const sealCutShort = (t: RunTranscript): RunTranscript => ({ ...flush(closeDangling(t)), sealed: true });

const apply = readsEvents<RunTranscript>(
  {
    MessageReceived: (t, event) => add(t, { role: "user", content: event.data.text }),
    InterventionReceived: (t, event) => ({ ...t, pending: [...t.pending, event.data.text] }),
    ModelCalled: (t) => flush(t),
    ModelWarned: (t, event) => add(t, stepMessageOf(event)!),
    ModelReplied: (t, event) => {
      const { text, toolCalls } = event.data;
      if (text === null && toolCalls.length === 0) return t;
      const calls: ChatToolCall[] = toolCalls.map((c) => ({
        id: c.id,
        type: "function",
        function: { name: c.name, arguments: argumentsAsString(c.arguments) },
      }));
      return add(
        t,
        calls.length === 0
          ? { role: "assistant", content: text }
          : { role: "assistant", content: text, tool_calls: calls },
      );
    },
    ToolReturned: (t, event) => add(t, stepMessageOf(event)!),
    ToolFailed: (t, event) => add(t, stepMessageOf(event)!),
    RunCompleted: (t) => ({ ...flush(t), sealed: true }),
    RunStopped: sealCutShort,
    RunFailed: sealCutShort,
    RunInterrupted: sealCutShort,
    HistoryCompacted: (t, event) => {
      const { topics, summary, elided } = event.data;
      const known = new Set((t.elided ?? []).map((e) => e.toolCallId));
      return {
        ...t,
        compaction: topics.length > 0 ? { position: event.globalPosition, topics, summary } : (t.compaction ?? null),
        elided: [...(t.elided ?? []), ...elided.filter((e) => !known.has(e.toolCallId))],
      };
    },
  },
  // The run is listed at its first event.
  (t, event) => (t.firstPosition === 0 ? { ...t, firstPosition: event.globalPosition } : t),
);

/** Key: `<contextId>/<runId>` (see `transcriptKey`); grouped by context, ordered by the run's first position. */
export const transcriptProjection = defineProjection<RunTranscript>({
  name: "transcript",
  version: 2,
  keysOf: (event) =>
    apply.types.has(event.type) && "runId" in event.data && event.data.runId !== null
      ? [transcriptKey(event.streamId, event.data.runId)]
      : [],
  init: initRunTranscript,
  evolve: onceByPositionFresh(apply),
  columns: (_key, t) => ({ group: t.contextId, order: t.firstPosition }),
});

export { historyOf } from "./topics.ts";

/**
 * The transcript of one context's events, in memory, with the same evolve the engine persists.
 * @example transcriptOf(await store.readStream(contextId))
 */
export const transcriptOf = (events: Iterable<RecordedEvent>, options: { full?: boolean } = {}): ChatMessage[] =>
  historyOf(foldEvents(transcriptProjection, events).values(), options);
