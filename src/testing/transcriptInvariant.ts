// The transcript invariant: the model's history holds what the log delivered, and every tool call is answered.
import type { RecordedEvent } from "../events/schema.ts";
import type { ChatMessage } from "../models/messages.ts";
import { isTerminal, violation as v, type Violation } from "./invariants.ts";
import { openRunOf } from "./runInvariants.ts";

/** Interventions a later model call (or the run's end) delivered; the rest still wait. */
const deliveredTexts = (stream: readonly RecordedEvent[]): string[] => {
  const out: string[] = [];
  let pending: string[] = [];
  for (const e of stream) {
    if (e.type === "MessageReceived") out.push(e.data.text);
    else if (e.type === "InterventionReceived") pending.push(e.data.text);
    else if (e.type === "ModelCalled" || isTerminal(e)) {
      out.push(...pending);
      pending = [];
    }
  }
  return out;
};

/**
 * The history holds every message and delivered intervention once, in log order (warnings aside), and
 * every assistant tool call is answered by exactly one tool message right after it (the current run's
 * last step may still be waiting for its answers).
 */
export const checkTranscript = (
  contextId: string,
  stream: readonly RecordedEvent[],
  history: readonly ChatMessage[],
): Violation[] => {
  const out: Violation[] = [];
  const warnings = new Set(stream.flatMap((e) => (e.type === "ModelWarned" ? [e.data.text] : [])));
  const want = deliveredTexts(stream);
  const got = history.flatMap((m) => (m.role === "user" && !warnings.has(m.content) ? [m.content] : []));
  if (JSON.stringify(want) !== JSON.stringify(got)) {
    out.push(
      v(
        "transcript",
        contextId,
        `user messages are ${JSON.stringify(got).slice(0, 300)}, the log recorded ${JSON.stringify(want).slice(0, 300)}`,
      ),
    );
  }
  const running = openRunOf(stream) !== null;
  for (let i = 0; i < history.length; i++) {
    const m = history[i]!;
    if (m.role === "tool" && (i === 0 || (history[i - 1]!.role !== "tool" && history[i - 1]!.role !== "assistant"))) {
      out.push(v("transcript", contextId, `tool message ${m.tool_call_id} at #${i} follows no assistant message`));
    }
    if (m.role !== "assistant" || !m.tool_calls?.length) continue;
    const answers: string[] = [];
    let j = i + 1;
    for (; j < history.length && history[j]!.role === "tool"; j++)
      answers.push((history[j] as { tool_call_id: string }).tool_call_id);
    const asked = m.tool_calls.map((c) => c.id);
    const tail = j === history.length && running;
    const same = JSON.stringify([...asked].sort()) === JSON.stringify([...answers].sort());
    if (!same && !(tail && answers.every((a) => asked.includes(a)))) {
      out.push(
        v(
          "transcript",
          contextId,
          `assistant message #${i} asked [${asked.join(", ")}], answered [${answers.join(", ")}]`,
        ),
      );
    }
  }
  return out;
};
