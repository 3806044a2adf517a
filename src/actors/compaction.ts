// Compaction before a model call: the request is fitted to the model's window by summarising old topics and
// eliding old large tool results, recorded as HistoryCompacted (docs/compaction.md).
//
// Requirements:
// - No window configured: nothing is counted, the transcript goes as it is.
// - The plan is windowPlan.ts's; the summary comes from the context's own model (one call per chunk of
//   summaryRequest.ts, the running summary carried from chunk to chunk), held to its cap, and is recorded with
//   the call's usage and duration in HistoryCompacted before the request that uses it is sent. Each summary
//   request, and the request it served, takes its own share of the preset's rate buckets under the call's place.
// - In a budgeted tree each summary call reserves from the tree's budget first and is settled to its usage
//   (budgetGate.ts); one that does not fit parks the run (`BudgetParked`), which compacts afresh once extended.
// - The request sent is the transcript read back from the log after the compaction (the same the projection
//   rebuilds), so a resumed run sends the same bytes and never asks for the summary again.
// - At most `MAX_ROUNDS` compactions before one call; a request still over the window then, or one the plan
//   cannot bring under it, fails the call with `context_overflow` (a ModelError, so the loop records it).
import * as Effect from "effect/Effect";
import type { Ticket } from "../models/callGate.ts";
import type { ChatMessage } from "../models/messages.ts";
import { ModelError, type ModelTurn } from "../models/port.ts";
import { type TokenCounter, tokenCounterFor } from "../models/tokenCount.ts";
import { messagesOf, type TopicView } from "../projections/topics.ts";
import { type LogError, logWrite } from "./loopErrors.ts";
import { BudgetParked } from "./budgetGate.ts";
import type { LoopEnv } from "./messageLoop.ts";
import { modelRequest } from "./loopEnv.ts";
import { capSummary, summaryChunks, summaryPrompt } from "./summaryRequest.ts";
import { applyPlan, planWindow, requestTokens, summaryCap, type WindowSettings } from "./windowPlan.ts";

/** A context's window: its settings, and its history as topics (ContextSession.topics). */
export type WindowEnv = { settings: WindowSettings; topics: () => TopicView };

/** Compactions allowed before one model call; the plan needs one, the rest are for summaries that came out long. */
export const MAX_ROUNDS = 3;

const overflow = (message: string) => new ModelError("context_overflow", message, false);

const asModelError = (e: unknown): ModelError =>
  e instanceof ModelError
    ? e
    : new ModelError("unknown", e instanceof Error ? e.message : String(e), false, { cause: e });

/** A request's counted input for the gate's `tokensPerMinute` (0 when the preset has none: nothing is counted). */
export const gateTokens = (
  env: LoopEnv,
  counter: TokenCounter,
  messages: ChatMessage[],
  tools: LoopEnv["toolSpecs"] = [],
): number => (env.gate?.gate.countsTokens(env.gate.preset) ? counter.request({ messages, tools: [...tools] }) : 0);

/** The summary of the chunks, each request carrying the running summary; usage summed over the calls. */
const summarise = async (
  env: LoopEnv,
  step: number,
  chunks: readonly string[],
  start: string | null,
  cap: number,
  counter: TokenCounter,
  signal: AbortSignal,
  ticket: Ticket | null,
) => {
  let running = start;
  const usage = { inputTokens: 0, outputTokens: 0 };
  let counted = false;
  for (const chunk of chunks) {
    let turn: ModelTurn;
    const messages = summaryPrompt(running, chunk);
    // Each summary is a model call like any other: its reservation from the tree's budget first.
    const budget = await env.budget?.reserve({ step, messages: () => messages, tools: [], summary: true });
    if (budget && "parked" in budget) {
      throw new BudgetParked({ facts: budget.parked });
    }
    const reservation = budget?.reserved ?? null;
    // Then its share of the preset's rate buckets (callGate.ts).
    try {
      await ticket?.another(gateTokens(env, counter, messages), signal);
    } catch (e) {
      await reservation?.release(false);
      throw e;
    }
    try {
      turn = await env.modelPort.call({ ...modelRequest(env, messages, [], signal), purpose: "compaction" });
    } catch (e) {
      // A stop cut it off once it was sent (its input was spent); a failed call spent nothing.
      await reservation?.release(signal.aborted).catch(() => undefined);
      const err = asModelError(e);
      throw new ModelError(err.reason, `The summary call of a compaction failed: ${err.message}`, err.retryable, {
        cause: err,
        ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
        ...(err.status !== undefined ? { status: err.status } : {}),
      });
    }
    await reservation?.spend(turn.usage ?? null);
    if (turn.usage) {
      counted = true;
      usage.inputTokens += turn.usage.inputTokens;
      usage.outputTokens += turn.usage.outputTokens;
    }
    const text = typeof turn.text === "string" ? capSummary(turn.text, cap, counter) : "";
    running = text.length > 0 ? text : running;
  }
  return { summary: running ?? "(nothing to summarise)", usage: counted ? usage : null };
};

/**
 * The messages of the next request (system prompt first), compacted when the window asks for it. `force`: the
 * endpoint refused the last request as too long. Fails with a ModelError (`context_overflow`, or the summary
 * call's own) that the loop records as the call's failure.
 */
export const requestMessages = (
  env: LoopEnv,
  step: number,
  force: boolean,
  ticket: Ticket | null = null,
): Effect.Effect<ChatMessage[], ModelError | LogError | BudgetParked> =>
  Effect.gen(function* () {
    const window = env.window;
    const system: ChatMessage = { role: "system", content: env.systemPrompt };
    // A 429 that came back since the call was admitted pauses it too, before its request leaves.
    const paused = ticket?.unpaused();
    if (paused) yield* Effect.promise(() => paused);
    if (!window) return [system, ...env.transcript()];
    const counter = yield* Effect.promise(() => tokenCounterFor(env.model.name));
    const { settings } = window;
    let summarised = false;
    for (let round = 1; ; round++) {
      const view = window.topics();
      const input = {
        systemPrompt: env.systemPrompt,
        tools: env.toolSpecs,
        view,
        window: settings,
        counter,
        force: force && round === 1,
      };
      const plan = planWindow(input);
      if (plan.kind === "fits") {
        const messages = [system, ...messagesOf(view)];
        // After summaries, the request they served takes a share of its own.
        const waiting = summarised ? ticket?.another(gateTokens(env, counter, messages, env.toolSpecs)) : null;
        if (waiting) yield* Effect.promise(() => waiting);
        return messages;
      }
      if (plan.kind === "overflow") return yield* Effect.fail(overflow(plan.message));
      if (round > MAX_ROUNDS) {
        return yield* Effect.fail(
          overflow(
            `Compaction did not converge in ${MAX_ROUNDS} rounds: the request is still ${plan.tokensBefore} tokens for a window of ${settings.contextWindow} (threshold ${Math.floor(settings.compactAt * settings.contextWindow)}).`,
          ),
        );
      }
      const cap = summaryCap(settings);
      const started = Date.now();
      let summary: string | null = view.summary;
      let usage: { inputTokens: number; outputTokens: number } | null = null;
      let calls = 0;
      if (plan.summarise.length > 0) {
        const chunks = yield* Effect.try({
          try: () => summaryChunks(plan.summarise, settings, counter),
          catch: (e) => overflow(e instanceof Error ? e.message : String(e)),
        });
        const done = yield* Effect.tryPromise({
          try: (signal) => summarise(env, step, chunks, view.summary, cap, counter, signal, ticket),
          catch: (e) => (e instanceof BudgetParked ? e : asModelError(e)),
        });
        ({ summary, usage } = done);
        summarised = true;
        calls = chunks.length;
      }
      const after = applyPlan(view, plan.summarise, plan.elide, summary);
      const topics = plan.summarise.length > 0 ? [...view.covered, ...plan.summarise.map((t) => t.runId)] : [];
      yield* logWrite(() =>
        env.writer.append(
          [
            {
              type: "HistoryCompacted",
              data: {
                runId: env.handle.runId,
                step,
                model: env.model.name,
                topics: topics as never,
                summary: plan.summarise.length > 0 ? (summary ?? "") : "",
                elided: plan.elide.map((e) => ({ toolCallId: e.toolCallId, tokens: e.tokens })),
                tokensBefore: plan.tokensBefore,
                // Counted on the view the projection of this very fact shows.
                tokensAfter: requestTokens(input, messagesOf(after)),
                trigger: force ? "endpoint" : "threshold",
                usage,
                calls,
                durationMs: Math.max(0, Date.now() - started),
              },
            },
          ],
          { correlationId: env.handle.correlationId, causationId: env.handle.runId },
        ),
      );
    }
  });
