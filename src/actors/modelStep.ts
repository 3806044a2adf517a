// One step's model call: its attempts, each recorded (ModelCalled, ModelCallFailed with the delay its retry waits),
// under the tree's budget and the runtime's caps, and the run's end when it fails for good.
//
// Requirements:
// - Retryable model errors are retried with backoff (Retry-After honoured) and each failure is recorded; a 429 also
//   pauses the call's preset for every caller (callQueue.ts), and may be retried `rateLimitRetries` times.
// - Each step's model call reserves from the tree's budget first (budgetGate.ts); one that does not fit parks the run.
// - Each attempt then waits for its place under the runtime's caps (callQueue.ts), visibly when it has to wait.
// - A resumed step starts at the attempt its plan says, or gives up as its last recorded failure did.
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { ChatMessage } from "../models/messages.ts";
import { ModelError, type ModelTurn } from "../models/port.ts";
import { type LogError, logWrite, ModelCallFailed, retryDelayMs } from "./loopErrors.ts";
import type { ResumePlan } from "./resumePlan.ts";
import { requestMessages } from "./compaction.ts";
import { type BudgetParked, withBudget } from "./budgetGate.ts";
import { withPlace } from "./callQueue.ts";
import { append, fail, modelRequest, type LoopEnv, type Terminal } from "./loopEnv.ts";

const toModelError = (e: unknown): ModelError =>
  e instanceof ModelError
    ? e
    : new ModelError("unknown", e instanceof Error ? e.message : String(e), false, { cause: e });

/**
 * One attempt: ModelCalled, the request fitted to the window (compaction.ts), the call, and on failure
 * ModelCallFailed with the delay the retry will wait. `force`: the endpoint refused the last attempt as too long;
 * `retry`: the provider refused the last one with a 429 (its place in the queue comes before calls not sent yet).
 */
const attemptModelCall = (env: LoopEnv, step: number, attempt: number, force: boolean, retry = false) =>
  withPlace(
    env.gate,
    env.handle,
    { step, attempt, retry },
    (events) => append(env, events),
    ({ admitted, ticket }) =>
      Effect.gen(function* () {
        const { runId } = env.handle;
        // The run's first call was recorded with its start (interventions since then wait for the next call), or
        // the call was recorded before the run parked on its budget in its compaction.
        const parkedCall = env.handle.parkedCall;
        const recorded =
          (step === 1 && attempt === 1 && env.handle.firstCallRecorded) ||
          (parkedCall?.step === step && parkedCall.attempt === attempt);
        if (!recorded || admitted) {
          yield* logWrite(() =>
            // The transcript now holds every intervention recorded so far (ModelCalled carries them).
            env.writer.append(
              [
                ...(admitted ? [admitted] : []),
                ...(recorded
                  ? []
                  : [{ type: "ModelCalled", data: { runId, step, attempt, model: env.model.name } } as const]),
              ],
              {
                correlationId: env.handle.correlationId,
                causationId: runId,
              },
            ),
          );
        }
        env.handle.inFlight = { kind: "model", step, attempt };
        const result = yield* Effect.result(
          requestMessages(env, step, force, ticket).pipe(
            Effect.flatMap((messages) =>
              Effect.tryPromise({
                try: (signal) => env.modelPort.call(modelRequest(env, messages, env.toolSpecs, signal)),
                catch: toModelError,
              }),
            ),
          ),
        );
        env.handle.inFlight = null;
        if (Result.isSuccess(result)) {
          ticket?.done({ kind: "replied", usage: result.success.usage ?? null });
          return result.success;
        }
        const err = result.failure;
        if (!(err instanceof ModelError)) return yield* Effect.fail(err);
        // The endpoint's own "too long" gets one compaction and a retry at once; a second one is final.
        const retryInMs =
          err.reason === "context_overflow" && err.status !== undefined && !force
            ? 0
            : retryDelayMs(env.limits, attempt, err);
        // A 429 pauses the preset for every caller of this runtime: as long as the provider said, else this call's wait.
        ticket?.done(
          err.reason === "rate_limited"
            ? { kind: "rate_limited", pauseMs: err.retryAfterMs ?? retryInMs ?? env.limits.retryBaseMs }
            : { kind: "failed" },
        );
        yield* append(env, [
          {
            type: "ModelCallFailed",
            data: {
              runId,
              step,
              attempt,
              reason: err.reason,
              message: err.message,
              retryable: err.retryable,
              retryInMs,
            },
          },
        ]);
        return yield* Effect.fail(new ModelCallFailed({ error: err, attempt, retryInMs }));
      }),
  );

const gaveUp = (env: LoopEnv, f: { reason: string; message: string; retryable: boolean; attempt: number }) => {
  const why = f.retryable ? `gave up after ${f.attempt} attempts` : "not retryable";
  const reason = f.reason === "context_overflow" ? "context_overflow" : "model_error";
  return fail(env, reason, `Model call failed (${f.reason}, ${why}): ${f.message}`).pipe(
    Effect.map((terminal): Terminal => ({ terminal })),
  );
};

/**
 * One model call with retries, each after the delay its failure recorded (`retryInMs`; none once retries are
 * used up or the error is not retryable); the turn, or the run's end when it failed for good. A resumed step
 * starts at the attempt its plan says, or gives up as its last recorded failure did.
 */
export const callModel = (
  env: LoopEnv,
  step: number,
  from: ResumePlan | null,
): Effect.Effect<{ turn: ModelTurn } | Terminal, LogError> => {
  if (from?.failed && from.failed.retryInMs === null) return gaveUp(env, from.failed);
  // Not Effect.retry with a Schedule: building its driver cost every model call more than the call's own bookkeeping.
  const attemptFrom = (
    attempt: number,
    force: boolean,
    retry = false,
  ): Effect.Effect<ModelTurn, ModelCallFailed | BudgetParked | LogError> =>
    attemptModelCall(env, step, attempt, force, retry).pipe(
      Effect.catchTag("ModelCallFailed", (f) =>
        f.retryInMs === null
          ? Effect.fail(f)
          : Effect.sleep(Duration.millis(f.retryInMs)).pipe(
              Effect.andThen(() =>
                attemptFrom(
                  attempt + 1,
                  force || f.error.reason === "context_overflow",
                  f.error.reason === "rate_limited",
                ),
              ),
            ),
      ),
    );
  const request = {
    step,
    messages: (): ChatMessage[] => [{ role: "system", content: env.systemPrompt }, ...env.transcript()],
    tools: env.toolSpecs,
  };
  return withBudget(env.budget, env.handle, request, attemptFrom(from?.attempt ?? 1, false)).pipe(
    Effect.map((turn) => ("parked" in turn ? { terminal: turn.parked } : { turn })),
    // A compaction's summary did not fit: the run parked (its facts recorded), its ModelCalled standing.
    Effect.catchTag("BudgetParked", (p) => {
      env.handle.parked = true;
      return Effect.succeed({ terminal: p.facts });
    }),
    Effect.catchTag("ModelCallFailed", (f) =>
      gaveUp(env, {
        reason: f.error.reason,
        message: f.error.message,
        retryable: f.error.retryable,
        attempt: f.attempt,
      }),
    ),
  );
};
