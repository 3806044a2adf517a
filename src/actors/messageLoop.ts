// The message loop (monologue) of one run, as an Effect program: model call, tool calls, checkpoints, until a final answer.
//
// Requirements:
// - Every step is recorded before its effect is visible: ModelCalled before the call (the first one with
//   the run's start), ModelReplied or ModelCallFailed after it, ToolCalled before a tool runs (or with
//   the tool's own first append, for a tool that records its call) and ToolReturned / ToolFailed after.
// - Interventions are delivered at every checkpoint: before each model call (they enter the transcript
//   with ModelCalled) and between tool calls (the remaining calls are skipped so the model sees them now).
// - Bad arguments, unknown tools and thrown tool errors reach the model as the tool's result.
// - A call that needs approval is requested (approvalGate.ts), the reply's other calls go on, then the
//   loop returns parked (`handle.parked`); a run that goes on after the decisions (`env.parked`) first
//   answers the parked step's open calls (a granted one runs, a denied one gets the reason), then steps on.
// - A repeated identical reply, or an unusable (empty) reply, gets one warning; the next one fails the run.
// - Retryable model errors are retried with backoff (Retry-After honoured) and each failure is recorded; a 429 also
//   pauses the call's preset for every caller (callQueue.ts), and may be retried `rateLimitRetries` times.
// - Each step's model call reserves from the tree's budget first (budgetGate.ts); one that does not fit parks the run.
// - Each attempt then waits for its place under the runtime's caps (callQueue.ts), visibly when it has to wait.
// - The run ends exactly once: RunCompleted, RunFailed, or (recorded by the stop) RunStopped; it never
//   completes while an intervention is undelivered.
// - A resumed run (`resume`) goes on at its last recorded step (resumePlan.ts): a cut-off tool call is resumed
//   by its tool (`resume`), run again when the tool is idempotent, or else answered with INTERRUPTED_CALL.
// Subpaths, not the package root: the root loads all of effect (247 modules) where these need 65.
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { DomainEvent, RecordedEvent, RunFailureReason } from "../events/schema.ts";
import type { ChatMessage } from "../models/messages.ts";
import { ModelError, type ModelPort, type ModelTurn, type ToolSpec } from "../models/port.ts";
import { recordsCallOf, type Tool, type ToolContext, type ToolOutcome } from "../tools/defineTool.ts";
import { callTool } from "../tools/toolCall.ts";
import type { StreamWriter } from "./streamWriter.ts";
import type { RunHandle } from "./runHandle.ts";
import type { ApprovalPort, Decision, ParkedStep } from "./approvalGate.ts";
import { asLogError, type LogError, logWrite, type LoopLimits, ModelCallFailed, retryDelayMs } from "./loopErrors.ts";
import type { ResumePlan } from "./resumePlan.ts";
import { requestMessages, type WindowEnv } from "./compaction.ts";
import { type NormalizedCall, normalizeCalls, replyKeyOf } from "./replies.ts";
import { type BudgetPort, replySettles, withBudget } from "./budgetGate.ts";
import { type GateEnv, withPlace } from "./callQueue.ts";

export type { LoopLimits } from "./loopErrors.ts";

export type LoopEnv = {
  handle: RunHandle;
  writer: StreamWriter;
  agentNumber: number;
  profile: string;
  model: { name: string; baseURL?: string };
  modelPort: ModelPort;
  systemPrompt: string;
  /** The context's transcript now, exactly as the model will be sent it (without the system prompt). */
  transcript: () => ChatMessage[];
  tools: ReadonlyMap<string, Tool<unknown>>;
  toolSpecs: ToolSpec[];
  limits: LoopLimits;
  /** The stored result a `§§result(<tool call id>)` reference names. */
  resolveReference: (toolCallId: string) => string | undefined;
  /** Whether the log still shows this run open (a stop or a close may have ended it first). */
  runOpen: () => boolean;
  /** Whether the context is paused now (the machine's `paused`). */
  paused: () => boolean;
  /** Resolves once the context is not paused (the machine's `paused`); rejects when `signal` aborts. */
  whileNotPaused: (signal: AbortSignal) => Promise<void>;
  /** Whether an intervention was recorded that no model call has carried yet (the machine's context). */
  interventionPending: () => boolean;
  /** Cancels the run's jobs still running, before the run ends. */
  cancelOpenJobs: () => Promise<void>;
  /** Which calls wait for a person's decision. */
  approvals: ApprovalPort;
  /** The step a parked run goes on from, when this run is one; null for a run from its start. */
  parked: ParkedStep | null;
  /** Extra fields tools of this runtime get (delegation uses them). */
  toolContext: (toolCallId: string, signal: AbortSignal, step: number) => ToolContext;
  /** Where a run a gone process left unfinished picks up; absent for a run that starts afresh. */
  resume?: ResumePlan | null;
  /** The model's context window, when its preset sets one: the history is compacted to fit (compaction.ts). */
  window?: WindowEnv;
  /** The tree's budget each model call reserves from (budgetGate.ts); absent: nothing is reserved. */
  budget?: BudgetPort;
  /** The runtime's concurrency caps and rate limits each model call waits on (callQueue.ts); absent: none are set. */
  gate?: GateEnv;
};

export const WARN_REPEATED =
  "You sent the same reply as before. Do something different: use another tool, change the arguments, or give your final answer with `response`.";
export const WARN_UNUSABLE =
  "Your reply had neither text nor tool calls. Call a tool, or give your final answer with the `response` tool.";
const SKIPPED_FOR_MESSAGE = "Not run: a new message arrived before this tool call; read it and decide again.";
const SKIPPED_AFTER_RESPONSE = "Not run: the `response` tool ended the turn before this tool call.";
const SKIPPED_REPEATED = "Not run: this reply repeats the previous one.";

type Terminal = { terminal: RecordedEvent[] };

const append = (env: LoopEnv, events: DomainEvent[]) =>
  logWrite(() => env.writer.append(events, { correlationId: env.handle.correlationId, causationId: env.handle.runId }));

/** Records an effect that is over; it reaches the log with the next append, before the next effect. */
const stage = (env: LoopEnv, events: DomainEvent[]) =>
  Effect.sync(() => env.writer.stage(events, { correlationId: env.handle.correlationId, causationId: env.handle.runId }));

/** Appends the run's end unless it already ended (a stop or a close won the race). */
const endWith = (env: LoopEnv, event: DomainEvent) =>
  logWrite(() =>
    env.writer.exclusive(async (appendNow) =>
      env.runOpen() ? appendNow([event], { correlationId: env.handle.correlationId, causationId: env.handle.runId }) : [],
    ),
  );

const fail = (env: LoopEnv, reason: RunFailureReason, message: string) =>
  logWrite(() => env.cancelOpenJobs()).pipe(
    Effect.andThen(endWith(env, { type: "RunFailed", data: { runId: env.handle.runId, reason, message } })),
  );

/** Completes the run with `response`, unless an intervention is waiting: then the loop goes on. */
const tryComplete = (env: LoopEnv, response: string) =>
  logWrite(() =>
    env.cancelOpenJobs().then(() => env.writer.exclusive(async (appendNow): Promise<RecordedEvent[] | null> => {
      if (!env.runOpen()) return [];
      if (env.interventionPending()) return null;
      return appendNow([{ type: "RunCompleted", data: { runId: env.handle.runId, response } }], {
        correlationId: env.handle.correlationId,
        causationId: env.handle.runId,
      });
    })),
  );

/** Waits at a checkpoint while the context is paused; a context that is not (nearly always) goes on at once. */
const waitWhilePaused = (env: LoopEnv) =>
  Effect.suspend(() => (env.paused() ? Effect.tryPromise({ try: (signal) => env.whileNotPaused(signal), catch: (e) => e }).pipe(Effect.orDie) : Effect.void));

const toModelError = (e: unknown): ModelError =>
  e instanceof ModelError ? e : new ModelError("unknown", e instanceof Error ? e.message : String(e), false, { cause: e });

/**
 * One attempt: ModelCalled, the request fitted to the window (compaction.ts), the call, and on failure
 * ModelCallFailed with the delay the retry will wait. `force`: the endpoint refused the last attempt as too long;
 * `retry`: the provider refused the last one with a 429 (its place in the queue comes before calls not sent yet).
 */
const attemptModelCall = (env: LoopEnv, step: number, attempt: number, force: boolean, retry = false) =>
  withPlace(env.gate, env.handle, { step, attempt, retry }, (events) => append(env, events), ({ admitted, ticket }) => Effect.gen(function* () {
    const { runId } = env.handle;
    // The run's first call was recorded with its start (interventions since then wait for the next call).
    const recorded = step === 1 && attempt === 1 && env.handle.firstCallRecorded;
    if (!recorded || admitted) {
      yield* logWrite(() =>
        // The transcript now holds every intervention recorded so far (ModelCalled carries them).
        env.writer.append([...(admitted ? [admitted] : []), ...(recorded ? [] : [{ type: "ModelCalled", data: { runId, step, attempt, model: env.model.name } } as const])], {
          correlationId: env.handle.correlationId,
          causationId: runId,
        }),
      );
    }
    env.handle.inFlight = { kind: "model", step, attempt };
    const result = yield* Effect.result(
      requestMessages(env, step, force, ticket).pipe(Effect.flatMap((messages) => Effect.tryPromise({
        try: (signal) =>
          env.modelPort.call({
            contextId: env.handle.contextId,
            agentNumber: env.agentNumber,
            profile: env.profile,
            model: env.model.name,
            ...(env.model.baseURL ? { baseURL: env.model.baseURL } : {}),
            messages,
            tools: env.toolSpecs,
            signal,
          }),
        catch: toModelError,
      }))),
    );
    env.handle.inFlight = null;
    if (Result.isSuccess(result)) {
      ticket?.done({ kind: "replied", usage: result.success.usage ?? null });
      return result.success;
    }
    const err = result.failure;
    if (!(err instanceof ModelError)) return yield* Effect.fail(err);
    // The endpoint's own "too long" gets one compaction and a retry at once; a second one is final.
    const retryInMs = err.reason === "context_overflow" && err.status !== undefined && !force ? 0 : retryDelayMs(env.limits, attempt, err);
    // A 429 pauses the preset for every caller of this runtime: as long as the provider said, else this call's wait.
    ticket?.done(err.reason === "rate_limited" ? { kind: "rate_limited", pauseMs: err.retryAfterMs ?? retryInMs ?? env.limits.retryBaseMs } : { kind: "failed" });
    yield* append(env, [
      {
        type: "ModelCallFailed",
        data: { runId, step, attempt, reason: err.reason, message: err.message, retryable: err.retryable, retryInMs },
      },
    ]);
    return yield* Effect.fail(new ModelCallFailed({ error: err, attempt, retryInMs }));
  }));

const gaveUp = (env: LoopEnv, f: { reason: string; message: string; retryable: boolean; attempt: number }) => {
  const why = f.retryable ? `gave up after ${f.attempt} attempts` : "not retryable";
  const reason = f.reason === "context_overflow" ? "context_overflow" : "model_error";
  return fail(env, reason, `Model call failed (${f.reason}, ${why}): ${f.message}`).pipe(Effect.map((terminal): Terminal => ({ terminal })));
};

/**
 * One model call with retries, each after the delay its failure recorded (`retryInMs`; none once retries are
 * used up or the error is not retryable); the turn, or the run's end when it failed for good. A resumed step
 * starts at the attempt its plan says, or gives up as its last recorded failure did.
 */
const callModel = (env: LoopEnv, step: number, from: ResumePlan | null): Effect.Effect<{ turn: ModelTurn } | Terminal, LogError> => {
  if (from?.failed && from.failed.retryInMs === null) return gaveUp(env, from.failed);
  // Not Effect.retry with a Schedule: building its driver cost every model call more than the call's own bookkeeping.
  const attemptFrom = (attempt: number, force: boolean, retry = false): Effect.Effect<ModelTurn, ModelCallFailed | LogError> =>
    attemptModelCall(env, step, attempt, force, retry).pipe(
      Effect.catchTag("ModelCallFailed", (f) =>
        f.retryInMs === null
          ? Effect.fail(f)
          : Effect.sleep(Duration.millis(f.retryInMs)).pipe(Effect.andThen(() => attemptFrom(attempt + 1, force || f.error.reason === "context_overflow", f.error.reason === "rate_limited"))),
      ),
    );
  const request = { step, messages: (): ChatMessage[] => [{ role: "system", content: env.systemPrompt }, ...env.transcript()], tools: env.toolSpecs };
  return withBudget(env.budget, env.handle, request, attemptFrom(from?.attempt ?? 1, false)).pipe(
    Effect.map((turn) => ("parked" in turn ? { terminal: turn.parked } : { turn })),
    Effect.catchTag("ModelCallFailed", (f) => gaveUp(env, { reason: f.error.reason, message: f.error.message, retryable: f.error.retryable, attempt: f.attempt })),
  );
};

type ToolStepResult = { outcome: ToolOutcome } | { failed: string } | { parked: true } | Terminal;

/** `resumed`: the call is on the log as started, with no result (a restart cut it off). The path is the tools' (callTool); this records it. */
const runTool = (env: LoopEnv, step: number, call: NormalizedCall, decision: Decision | undefined, resumed = false) =>
  Effect.gen(function* () {
    const { runId } = env.handle;
    const calledEvent: DomainEvent = { type: "ToolCalled", data: { runId, step, toolCallId: call.id, name: call.name, arguments: call.arguments } };
    let called = resumed;
    const result = yield* Effect.tryPromise({
      try: (signal) =>
        callTool(
          { tools: env.tools, resolveReference: env.resolveReference, approvals: env.approvals, context: (sig) => env.toolContext(call.id, sig, step), signal },
          call,
          {
            decision,
            cutOff: resumed,
            // A call that started was past its approval (or needed none).
            pastApproval: resumed,
            starting: async (tool, input) => {
              // The call is on the log before the tool can have any effect: appended now, or with the tool's own first append.
              if (!called) env.writer.stage([calledEvent], { correlationId: env.handle.correlationId, causationId: runId });
              called = true;
              if (!recordsCallOf(tool, input)) await env.writer.append([], { correlationId: env.handle.correlationId, causationId: runId });
              env.handle.inFlight = { kind: "tool", toolCallId: call.id, name: call.name };
            },
          },
        ),
      catch: asLogError,
    });
    // Not on interruption: a stop records the call it cut off from `inFlight`.
    env.handle.inFlight = null;
    if (result.kind === "needs_approval") {
      // Asked on the log at once (with what the run staged): a person may decide while the other calls run.
      const { approvalId, expiresAt } = env.approvals.request();
      const request = { approvalId, runId, step, toolCallId: call.id, tool: call.name, arguments: call.arguments, contextId: env.handle.contextId, agentNumber: env.agentNumber, expiresAt };
      yield* append(env, [{ type: "ApprovalRequested", data: request as never }]);
      return { parked: true } as ToolStepResult;
    }
    if (!called) yield* stage(env, [calledEvent]);
    if (result.kind === "returned") {
      yield* stage(env, [{ type: "ToolReturned", data: { runId, toolCallId: call.id, name: call.name, result: result.outcome.text } }]);
      return { outcome: result.outcome } as ToolStepResult;
    }
    yield* stage(env, [{ type: "ToolFailed", data: { runId, toolCallId: call.id, name: call.name, error: result.error, repairable: !result.fatal } }]);
    if (result.fatal) return { terminal: yield* fail(env, "tool_error", `Tool '${call.name}' failed: ${result.error}`) } as ToolStepResult;
    return { failed: result.error } as ToolStepResult;
  });

const skipCalls = (env: LoopEnv, calls: readonly NormalizedCall[], why: string) =>
  calls.length === 0
    ? Effect.void
    : stage(
        env,
        calls.map((c) => ({
          type: "ToolFailed" as const,
          data: { runId: env.handle.runId, toolCallId: c.id, name: c.name, error: why, repairable: true },
        })),
      ).pipe(Effect.asVoid);

const NO_DECISIONS: ReadonlyMap<string, Decision> = new Map();
const NONE: ReadonlySet<string> = new Set();

/**
 * The calls of one reply, in order. Returns the run's end (or, when some call waits for approval, the facts
 * it parked with, `handle.parked` set), or null to go on with the next step.
 */
const runCalls = (
  env: LoopEnv,
  step: number,
  calls: readonly NormalizedCall[],
  decisions: ReadonlyMap<string, Decision>,
  resuming: Pick<ResumePlan, "answered" | "started"> | null = null,
) =>
  Effect.gen(function* () {
    let parked = false;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      // A resumed step: what is on the log stands; a call cut off by a restart passed its checkpoint before it started.
      if (resuming?.answered.has(call.id)) continue;
      const resumed = resuming?.started.has(call.id) === true;
      if (i > 0 && !resumed) {
        yield* waitWhilePaused(env);
        if (env.interventionPending()) {
          yield* skipCalls(env, calls.slice(i), SKIPPED_FOR_MESSAGE);
          break;
        }
      }
      const r = yield* runTool(env, step, call, decisions.get(call.id), resumed);
      if ("terminal" in r) return r;
      if ("parked" in r) {
        parked = true;
        continue;
      }
      if ("outcome" in r && r.outcome.kind === "response") {
        yield* skipCalls(env, calls.slice(i + 1), SKIPPED_AFTER_RESPONSE);
        const done = yield* tryComplete(env, r.outcome.text);
        if (done) return { terminal: done };
        break;
      }
    }
    if (!parked) return null;
    env.handle.parked = true;
    return { terminal: yield* append(env, []) };
  });

/** The whole run. Resolves with the facts that ended it. */
export const messageLoop = (env: LoopEnv): Effect.Effect<RecordedEvent[], LogError> =>
  // The loop only leaves through a `return`; the cast tells the compiler the endless `for` cannot fall through.
  Effect.gen(function* () {
    const { runId } = env.handle;
    const plan = env.resume ?? null;
    let previousReply: string | null = plan?.guards.previousReply ?? null;
    let warnedRepeat = plan?.guards.warnedRepeat ?? false;
    let warnedUnusable = plan?.guards.warnedUnusable ?? false;
    let firstStep = plan?.step ?? 1;
    if (env.parked) {
      // Going on after the decisions: the parked step's open calls first, then the next step.
      const { step, text, replyCalls, open, decisions, started } = env.parked;
      previousReply = replyKeyOf(text, replyCalls);
      const ran = yield* runCalls(env, step, open, decisions, { answered: NONE, started });
      if (ran) return ran.terminal;
      firstStep = step + 1;
    }
    for (let step = firstStep; ; step++) {
      yield* waitWhilePaused(env);
      // The step a resumed run continues at: a recorded reply was past the guards already; its results stand.
      const resuming = plan !== null && step === plan.step ? plan : null;
      if (resuming?.reply) {
        const { text, calls } = resuming.reply;
        const ran = calls.length === 0 ? { terminal: yield* tryComplete(env, text ?? "") } : yield* runCalls(env, step, calls, resuming.decisions, resuming);
        if (ran?.terminal) return ran.terminal;
        continue;
      }
      const called = yield* callModel(env, step, resuming);
      if ("terminal" in called) return called.terminal;
      const { turn } = called;
      const calls = normalizeCalls(turn, step);
      const text = typeof turn.text === "string" && turn.text.trim() !== "" ? turn.text : null;
      yield* stage(env, [
        {
          type: "ModelReplied",
          data: {
            runId,
            step,
            text,
            toolCalls: calls,
            usage: turn.usage ? { inputTokens: turn.usage.inputTokens, outputTokens: turn.usage.outputTokens } : null,
            ...replySettles(env.handle),
          },
        },
      ]);

      if (text === null && calls.length === 0) {
        if (warnedUnusable) return yield* fail(env, "unusable_replies", "The model sent two unusable replies in a row.");
        warnedUnusable = true;
        yield* stage(env, [{ type: "ModelWarned", data: { runId, step, text: WARN_UNUSABLE } }]);
        continue;
      }
      warnedUnusable = false;

      const replyKey = replyKeyOf(text, calls);
      if (replyKey === previousReply) {
        if (warnedRepeat) return yield* fail(env, "repeated_reply", "The model repeated the same reply after a warning.");
        warnedRepeat = true;
        yield* skipCalls(env, calls, SKIPPED_REPEATED);
        yield* stage(env, [{ type: "ModelWarned", data: { runId, step, text: WARN_REPEATED } }]);
        continue;
      }
      previousReply = replyKey;
      warnedRepeat = false;

      if (calls.length === 0) {
        const done = yield* tryComplete(env, text!);
        if (done) return done;
        continue;
      }

      const ran = yield* runCalls(env, step, calls, NO_DECISIONS);
      if (ran) return ran.terminal;
    }
  }) as Effect.Effect<RecordedEvent[], LogError>;
