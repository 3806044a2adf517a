// The window planner: whether the next request fits the model's window, and if not what compaction replaces.
// Pure (a function of the topic view, the window and a token counter), so the rules are property-tested.
//
// Requirements:
// - The request is counted whole: system prompt, tool schemas, messages and the reserved output (`maxOutputTokens`).
// - Over `compactAt` × `contextWindow`: summarise the oldest sealed topics (whole runs, so a tool call and its result
//   are never parted), as few as bring the request under half the threshold (so compaction is not asked again at
//   once); when all of them are not enough, old large tool results of the current topic become notes, the results
//   of one reply together (parallel results are kept or elided as one).
// - Never summarised or elided: the system prompt, the message that started the current run, the last turns of the
//   current topic (its last `KEPT_TURNS` replies and what followed them).
// - The summary is counted at its cap (`summaryCap`), which the runtime enforces on the reply, so the plan's estimate
//   is an upper bound and one compaction suffices.
// - When even the best plan leaves the request over the window, the answer is `overflow`, saying what did not fit.
// - `force` (the endpoint refused a request our count let through): compact as far as the plan can, whatever the count.
import type { ChatMessage } from "../models/messages.ts";
import type { ToolSpec } from "../models/port.ts";
import type { TokenCounter } from "../models/tokenCount.ts";
import { elidedNote, messagesOf, summaryMessage, type Topic, type TopicView } from "../projections/topics.ts";

export type WindowSettings = { contextWindow: number; maxOutputTokens: number; compactAt: number };

export type Counter = Pick<TokenCounter, "text" | "message" | "request">;

/** Replies of the current topic (and what follows them) that always stay as they are. */
export const KEPT_TURNS = 2;
/** A tool result is worth eliding from this size on (tokens). */
export const ELIDE_FROM = 64;
/** After a compaction the request should be at most this share of the threshold. */
export const TARGET_SHARE = 0.5;

/** The most tokens a summary may have: a tenth of the window, within the reply cap, at least 32. */
export const summaryCap = (w: WindowSettings): number =>
  Math.max(32, Math.min(w.maxOutputTokens, Math.floor(w.contextWindow / 10)));

export type PlanInput = {
  systemPrompt: string;
  tools: readonly ToolSpec[];
  view: TopicView;
  window: WindowSettings;
  counter: Counter;
  force?: boolean;
};

export type Elision = { runId: string; toolCallId: string; tokens: number };

export type Plan =
  | { kind: "fits"; tokens: number }
  | { kind: "compact"; tokensBefore: number; estimate: number; summarise: Topic[]; elide: Elision[] }
  | { kind: "overflow"; tokensBefore: number; message: string };

/** The tokens of the request for `messages` (without the system prompt), the reserved output included. */
export const requestTokens = (
  input: Pick<PlanInput, "systemPrompt" | "tools" | "window" | "counter">,
  messages: readonly ChatMessage[],
): number =>
  input.counter.request({
    messages: [{ role: "system", content: input.systemPrompt }, ...messages],
    tools: input.tools,
  }) + input.window.maxOutputTokens;

/** The view once a plan is applied with `summary` (what the projection shows after the HistoryCompacted). */
export const applyPlan = (
  view: TopicView,
  summarise: readonly Topic[],
  elide: readonly Elision[],
  summary: string | null,
): TopicView => {
  const gone = new Set(summarise.map((t) => t.runId));
  const notes = new Map(elide.map((e) => [`${e.runId}\u0000${e.toolCallId}`, e]));
  const topics = view.topics
    .filter((t) => !gone.has(t.runId))
    .map((t) => ({
      ...t,
      messages: t.messages.map((m) => {
        const e = m.role === "tool" ? notes.get(`${t.runId}\u0000${m.tool_call_id}`) : undefined;
        return e && m.role === "tool" ? { ...m, content: elidedNote(e.runId, e.toolCallId, e.tokens) } : m;
      }),
    }));
  return {
    summary: gone.size > 0 ? summary : view.summary,
    covered: gone.size > 0 ? [...view.covered, ...gone] : view.covered,
    topics,
  };
};

/** The groups of tool results of the current topic that may become notes, oldest first (one group per reply). */
export const elidableGroups = (current: Topic, counter: Counter): Elision[][] => {
  const replies = current.messages.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
  // The last KEPT_TURNS replies and everything after them stay.
  const keptFrom = replies.length > KEPT_TURNS ? replies[replies.length - KEPT_TURNS]! : 0;
  const groups: Elision[][] = [];
  let group: Elision[] = [];
  let big = false;
  const close = () => {
    if (group.length > 0 && big) groups.push(group);
    group = [];
    big = false;
  };
  for (let i = 1; i < keptFrom; i++) {
    const m = current.messages[i]!;
    if (m.role !== "tool") {
      close();
      continue;
    }
    if (m.content.startsWith("[Output elided")) continue;
    const tokens = counter.text(m.content);
    if (tokens >= ELIDE_FROM) big = true;
    group.push({ runId: current.runId, toolCallId: m.tool_call_id, tokens });
  }
  close();
  return groups;
};

const describe = (input: PlanInput, view: TopicView, current: Topic | undefined): string => {
  const { counter, window } = input;
  const system = counter.message({ role: "system", content: input.systemPrompt });
  const tools = input.counter.request({ messages: [], tools: input.tools });
  const first = current?.messages[0] ? counter.message(current.messages[0]) : 0;
  const rest = (current?.messages ?? []).slice(1).reduce((n, m) => n + counter.message(m), 0);
  const summary = view.summary === null ? 0 : counter.message(summaryMessage(view.summary));
  return (
    `The request does not fit the context window of ${window.contextWindow} tokens even after compaction: ` +
    `system prompt ${system}, tool schemas ${tools}, reserved output ${window.maxOutputTokens}, summary ${summary}, ` +
    `the message that started the run ${first}, the rest of the current run ${rest} (its last turns are never summarised).`
  );
};

/** What to do before the next model call. */
export const planWindow = (input: PlanInput): Plan => {
  const { view, window, counter } = input;
  const tokensBefore = requestTokens(input, messagesOf(view));
  const threshold = Math.floor(window.compactAt * window.contextWindow);
  if (tokensBefore <= threshold && !input.force) return { kind: "fits", tokens: tokensBefore };
  const target = Math.floor(Math.min(threshold, tokensBefore) * TARGET_SHARE);
  const cap = summaryCap(window);
  // The summary's message at its cap: a text of `cap` tokens, framed as the model reads it.
  const summaryTokens = counter.message(summaryMessage("")) + cap;
  const sealed = view.topics.filter((t) => t.sealed);
  const current = view.topics.find((t) => !t.sealed);
  const fixed = requestTokens(input, []);
  const tokensOf = (topics: readonly Topic[]) =>
    topics.reduce((n, t) => n + t.messages.reduce((s, m) => s + counter.message(m), 0), 0);
  const currentTokens = current ? tokensOf([current]) : 0;
  // Summarise the fewest oldest sealed topics that bring the request to the target (all of them if none does).
  let k = 0;
  let estimate = tokensBefore;
  if (sealed.length > 0) {
    let restTokens = tokensOf(sealed);
    for (k = 1; k <= sealed.length; k++) {
      restTokens -= tokensOf([sealed[k - 1]!]);
      estimate = fixed + summaryTokens + restTokens + currentTokens;
      if (estimate <= target) break;
    }
    k = Math.min(k, sealed.length);
  }
  const summarise = sealed.slice(0, k);
  const elide: Elision[] = [];
  if (estimate > target && current) {
    const noteTokens = (e: Elision) => counter.text(elidedNote(e.runId, e.toolCallId, e.tokens));
    for (const group of elidableGroups(current, counter)) {
      if (estimate <= target) break;
      for (const e of group) {
        elide.push(e);
        estimate -= e.tokens - noteTokens(e);
      }
    }
  }
  if (summarise.length === 0 && elide.length === 0) {
    if (tokensBefore <= window.contextWindow && !input.force) return { kind: "fits", tokens: tokensBefore };
    return { kind: "overflow", tokensBefore, message: describe(input, view, current) };
  }
  if (estimate > window.contextWindow)
    return {
      kind: "overflow",
      tokensBefore,
      message: describe(input, applyPlan(view, summarise, elide, view.summary), current),
    };
  return { kind: "compact", tokensBefore, estimate, summarise, elide };
};
