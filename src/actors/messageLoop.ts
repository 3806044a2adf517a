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
// A step's model call is modelStep.ts, its tool calls toolStep.ts, the run's writes and checkpoints loopEnv.ts.
// Subpaths, not the package root: the root loads all of effect (247 modules) where these need 65.
import * as Effect from "effect/Effect";
import type { RecordedEvent } from "../events/schema.ts";
import type { LogError } from "./loopErrors.ts";
import { normalizeCalls, replyKeyOf } from "./replies.ts";
import { replySettles } from "./budgetGate.ts";
import { fail, type LoopEnv, stage, tryComplete, waitWhilePaused } from "./loopEnv.ts";
import { callModel } from "./modelStep.ts";
import { NO_DECISIONS, NONE, runCalls, SKIPPED_REPEATED, skipCalls } from "./toolStep.ts";

export type { LoopLimits } from "./loopErrors.ts";
export type { LoopEnv } from "./loopEnv.ts";

export const WARN_REPEATED =
  "You sent the same reply as before. Do something different: use another tool, change the arguments, or give your final answer with `response`.";
export const WARN_UNUSABLE =
  "Your reply had neither text nor tool calls. Call a tool, or give your final answer with the `response` tool.";

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
        const ran =
          calls.length === 0
            ? { terminal: yield* tryComplete(env, text ?? "") }
            : yield* runCalls(env, step, calls, resuming.decisions, resuming);
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
        if (warnedUnusable)
          return yield* fail(env, "unusable_replies", "The model sent two unusable replies in a row.");
        warnedUnusable = true;
        yield* stage(env, [{ type: "ModelWarned", data: { runId, step, text: WARN_UNUSABLE } }]);
        continue;
      }
      warnedUnusable = false;

      const replyKey = replyKeyOf(text, calls);
      if (replyKey === previousReply) {
        if (warnedRepeat)
          return yield* fail(env, "repeated_reply", "The model repeated the same reply after a warning.");
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
