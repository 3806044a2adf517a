// Properties of the window planner and the topic view over random histories, windows and tool-call shapes:
// what compaction may and may not do, checked on the view the transcript projection rebuilds from the log.
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { ContextId, RunId } from "../../src/events/ids.ts";
import type { DomainEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { ChatMessage } from "../../src/models/messages.ts";
import { type TokenCounter, tokenCounterFor } from "../../src/models/tokenCount.ts";
import { foldEvents } from "../../src/projections/projection.ts";
import { messagesOf, summaryMessage, topicsOf, type TopicView } from "../../src/projections/topics.ts";
import { transcriptOf, transcriptProjection } from "../../src/projections/transcript.ts";
import { MAX_ROUNDS } from "../../src/actors/compaction.ts";
import { capSummary, summaryChunks, summaryPrompt } from "../../src/actors/summaryRequest.ts";
import {
  applyPlan,
  KEPT_TURNS,
  planWindow,
  requestTokens,
  summaryCap,
  type WindowSettings,
} from "../../src/actors/windowPlan.ts";
import { logBuilder } from "../../src/testing/recorded.ts";

const C = "ctx-w" as ContextId;
const SYSTEM = "You are A0. Use tools; answer with `response`.";
const TOOLS = [
  { name: "search", description: "Searches.", parameters: { type: "object", properties: { q: { type: "string" } } } },
];
let counter: TokenCounter;
beforeAll(async () => {
  counter = await tokenCounterFor("gpt-4o-mini");
});

const words = (n: number, seed: number) => Array.from({ length: n }, (_, j) => `w${(j * 7 + seed) % 97}`).join(" ");

type Call = { size: number };
type Turn = { text: string | null; calls: Call[] };
type TopicSpec = { message: string; turns: Turn[]; answer: string };

const callArb = fc.record({ size: fc.oneof(fc.nat({ max: 20 }), fc.integer({ min: 60, max: 900 })) });
const turnArb = fc.record({
  text: fc.option(fc.lorem({ maxCount: 8 }), { nil: null }),
  calls: fc.array(callArb, { minLength: 1, maxLength: 3 }),
});
const topicArb = fc.record({
  message: fc.lorem({ maxCount: 30 }),
  turns: fc.array(turnArb, { maxLength: 5 }),
  answer: fc.lorem({ maxCount: 20 }),
});
const historyArb = fc.record({ sealed: fc.array(topicArb, { maxLength: 10 }), current: topicArb });
const windowArb: fc.Arbitrary<WindowSettings> = fc.record({
  contextWindow: fc.integer({ min: 1200, max: 16_000 }),
  maxOutputTokens: fc.integer({ min: 64, max: 800 }),
  compactAt: fc.double({ min: 0.5, max: 1, noNaN: true }),
});

/** The facts of a history: sealed runs end in RunCompleted; the current one is mid-step. */
const eventsOf = (h: { sealed: TopicSpec[]; current: TopicSpec }): DomainEvent[] => {
  const out: DomainEvent[] = [];
  const topics = [...h.sealed, h.current];
  topics.forEach((t, i) => {
    const runId = `run-${i}` as RunId;
    out.push({ type: "MessageReceived", data: { runId, text: t.message, sender: "user" } });
    out.push({ type: "RunStarted", data: { runId, model: "gpt-4o-mini", superior: null } });
    t.turns.forEach((turn, s) => {
      const calls = turn.calls.map((_, c) => ({
        id: `call-${i}-${s}-${c}`,
        name: "search",
        arguments: { q: `q${c}` },
      }));
      out.push({ type: "ModelCalled", data: { runId, step: s + 1, attempt: 1, model: "gpt-4o-mini" } });
      out.push({ type: "ModelReplied", data: { runId, step: s + 1, text: turn.text, toolCalls: calls, usage: null } });
      turn.calls.forEach((call, c) => {
        out.push({
          type: "ToolCalled",
          data: { runId, step: s + 1, toolCallId: calls[c]!.id, name: "search", arguments: calls[c]!.arguments },
        });
        out.push({
          type: "ToolReturned",
          data: { runId, toolCallId: calls[c]!.id, name: "search", result: words(call.size, i + s + c) },
        });
      });
    });
    if (i < h.sealed.length) {
      out.push({ type: "ModelCalled", data: { runId, step: t.turns.length + 1, attempt: 1, model: "gpt-4o-mini" } });
      out.push({
        type: "ModelReplied",
        data: { runId, step: t.turns.length + 1, text: t.answer, toolCalls: [], usage: null },
      });
      out.push({ type: "RunCompleted", data: { runId, response: t.answer } });
    } else {
      out.push({ type: "ModelCalled", data: { runId, step: t.turns.length + 1, attempt: 1, model: "gpt-4o-mini" } });
    }
  });
  return out;
};

const viewOf = (events: readonly RecordedEvent[]): TopicView =>
  topicsOf(foldEvents(transcriptProjection, events).values());

/** Every tool call is answered right after its reply, and every result answers a call of the reply before it. */
const wellFormed = (messages: readonly ChatMessage[]): boolean => {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "assistant" && m.tool_calls) {
      const ids = m.tool_calls.map((c) => c.id);
      const answers = messages.slice(i + 1, i + 1 + ids.length);
      if (answers.length !== ids.length || answers.some((a, k) => a.role !== "tool" || a.tool_call_id !== ids[k]))
        return false;
    }
    if (m.role === "tool") {
      const before = messages
        .slice(0, i)
        .reverse()
        .find((x) => x.role !== "tool");
      if (before?.role !== "assistant" || !before.tool_calls?.some((c) => c.id === m.tool_call_id)) return false;
    }
  }
  return true;
};

const isNote = (m: ChatMessage) => m.role === "tool" && m.content.startsWith("[Output elided");

/**
 * Compacts as the runtime does (compaction.ts), with summaries of random lengths: plan, summarise (held to the
 * cap), record HistoryCompacted, read the view back from the log. Checks every rule on the way.
 */
const compactUntilDone = (
  h: { sealed: TopicSpec[]; current: TopicSpec },
  w: WindowSettings,
  summaryWords: number[],
) => {
  const log = logBuilder();
  for (const e of eventsOf(h)) log.add(C, e);
  const original = viewOf(log.events);
  const current = original.topics.at(-1)!;
  const keptFrom = (() => {
    const replies = current.messages.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
    return replies.length > KEPT_TURNS ? replies[replies.length - KEPT_TURNS]! : 0;
  })();
  const input = { systemPrompt: SYSTEM, tools: TOOLS, window: w, counter };
  for (let round = 1; ; round++) {
    const view = viewOf(log.events);
    const plan = planWindow({ ...input, view });
    expect(wellFormed(messagesOf(view))).toBe(true);
    if (plan.kind === "fits") {
      // The request sent fits the window.
      expect(requestTokens(input, messagesOf(view))).toBeLessThanOrEqual(w.contextWindow);
      return { outcome: "fits" as const, rounds: round, view, log };
    }
    if (plan.kind === "overflow") {
      expect(plan.message).toMatch(/does not fit the context window of \d+ tokens/);
      return { outcome: "overflow" as const, rounds: round, view, log };
    }
    // Converges within the bound the runtime enforces.
    expect(round).toBeLessThanOrEqual(MAX_ROUNDS);
    // Only sealed topics are summarised, oldest first; only the current topic's results are elided.
    expect(plan.summarise.every((t) => t.sealed)).toBe(true);
    expect(plan.summarise.map((t) => t.runId)).toEqual(view.topics.slice(0, plan.summarise.length).map((t) => t.runId));
    expect(plan.elide.every((e) => e.runId === current.runId)).toBe(true);
    // Each summary request fits the window, the running summary counted at its cap.
    const cap = summaryCap(w);
    const running = capSummary(words(4 * cap, 3), cap, counter);
    for (const chunk of plan.summarise.length > 0 ? summaryChunks(plan.summarise, w, counter) : []) {
      expect(counter.request({ messages: summaryPrompt(running, chunk), tools: [] }) + cap).toBeLessThanOrEqual(
        w.contextWindow,
      );
    }
    const summary =
      plan.summarise.length > 0
        ? capSummary(words(summaryWords[round % summaryWords.length]!, round), cap, counter)
        : null;
    const predicted = applyPlan(view, plan.summarise, plan.elide, summary);
    log.add(C, {
      type: "HistoryCompacted",
      data: {
        runId: current.runId as RunId,
        step: 1,
        model: "gpt-4o-mini",
        topics: (plan.summarise.length > 0 ? [...view.covered, ...plan.summarise.map((t) => t.runId)] : []) as RunId[],
        summary: summary ?? "",
        elided: plan.elide.map((e) => ({ toolCallId: e.toolCallId, tokens: e.tokens })),
        tokensBefore: plan.tokensBefore,
        tokensAfter: requestTokens(input, messagesOf(predicted)),
        trigger: "threshold",
        usage: null,
        calls: 1,
        durationMs: 0,
      },
    });
    const after = viewOf(log.events);
    // The projection rebuilt from the log shows exactly what the planner predicted: a resumed run sends the same bytes.
    expect(messagesOf(after)).toEqual(messagesOf(predicted));
    const sent = messagesOf(after);
    // Compaction by plan never passes the window (the summary was counted at its cap).
    expect(requestTokens(input, sent)).toBeLessThanOrEqual(Math.max(w.contextWindow, plan.tokensBefore));
    // The current run's first message and its last turns are untouched.
    const now = after.topics.at(-1)!;
    expect(now.runId).toBe(current.runId);
    expect(now.messages[0]).toEqual(current.messages[0]);
    expect(now.messages.slice(keptFrom)).toEqual(current.messages.slice(keptFrom));
    // Parallel results: the results of one reply are all notes or none.
    for (let i = 0; i < now.messages.length; i++) {
      const m = now.messages[i]!;
      if (m.role !== "assistant" || !m.tool_calls || m.tool_calls.length < 2) continue;
      const results = now.messages.slice(i + 1, i + 1 + m.tool_calls.length);
      const notes = results.filter(isNote).length;
      expect(notes === 0 || notes === results.length).toBe(true);
    }
  }
};

describe("given random histories, windows and tool-call shapes", () => {
  it("compaction keeps every rule and ends in a request that fits, or in a stated overflow", () => {
    const seen = { compactedThenFit: 0, overflow: 0, fitAtOnce: 0 };
    fc.assert(
      fc.property(
        historyArb,
        windowArb,
        fc.array(fc.integer({ min: 1, max: 2000 }), { minLength: 1, maxLength: 3 }),
        (h, w, sizes) => {
          const done = compactUntilDone(h, w, sizes);
          if (done.outcome === "overflow") seen.overflow++;
          else if (done.rounds > 1) seen.compactedThenFit++;
          else seen.fitAtOnce++;
          // The log keeps every original message: the full history is the uncompacted one.
          const plain = logBuilder();
          for (const e of eventsOf(h)) plain.add(C, e);
          expect(transcriptOf(done.log.events, { full: true })).toEqual(transcriptOf(plain.events));
        },
      ),
      { numRuns: 120 },
    );
    // The generated shapes exercise every outcome.
    expect(seen.compactedThenFit).toBeGreaterThan(10);
    expect(seen.fitAtOnce).toBeGreaterThan(0);
    expect(seen.overflow).toBeGreaterThan(0);
  });

  it("a rebuilt transcript equals the one folded event by event, and copies under new positions keep their view", () => {
    fc.assert(
      fc.property(historyArb, windowArb, fc.nat(), (h, w, cutSeed) => {
        const { log } = compactUntilDone(h, w, [40]);
        const whole = transcriptOf(log.events);
        // Event by event (a live context) equals all at once (a rebuild).
        const states = new Map();
        for (const e of log.events) foldEvents(transcriptProjection, [e], states);
        expect(messagesOf(topicsOf(states.values()))).toEqual(whole);
        // A fork copies the events up to a cut under new positions and ids: its view is the source's at that cut.
        const cut = (cutSeed % log.events.length) + 1;
        const prefix = log.events.slice(0, cut);
        const copied = prefix.map((e, i) => ({ ...e, globalPosition: 10_000 + 3 * i, streamId: "fork" as ContextId }));
        expect(transcriptOf(copied)).toEqual(transcriptOf(prefix));
      }),
      { numRuns: 60 },
    );
  });

  it("the summary leads the request, standing for the topics it covers", () => {
    const log = logBuilder();
    const h = {
      sealed: [
        { message: "first", turns: [], answer: "one" },
        { message: "second", turns: [], answer: "two" },
      ],
      current: { message: "third", turns: [], answer: "" },
    };
    for (const e of eventsOf(h)) log.add(C, e);
    log.add(C, {
      type: "HistoryCompacted",
      data: {
        runId: "run-2" as RunId,
        step: 1,
        model: "m",
        topics: ["run-0" as RunId],
        summary: "S",
        elided: [],
        tokensBefore: 9,
        tokensAfter: 5,
        trigger: "threshold",
        usage: null,
        calls: 1,
        durationMs: 0,
      },
    });
    expect(transcriptOf(log.events)).toEqual([
      summaryMessage("S"),
      { role: "user", content: "second" },
      { role: "assistant", content: "two" },
      { role: "user", content: "third" },
    ]);
  });
});
