// The typed failures of a run's loop, and the model call's retry delay.
//
// Requirements:
// - A failure to write the log travels the loop's error channel as what the store said (StoreError,
//   ConcurrencyError, EventValidationError, each tagged, with a reason); anything else a store throws
//   is a StoreError `unknown` with its message, never a defect.
// - A failed model call is a ModelCallFailed error carrying the attempt and the delay recorded for
//   the retry; the loop (messageLoop's `callModel`) waits exactly that delay, so the log says what the runtime did.
// - The delay honours Retry-After (never shorter), grows exponentially from `retryBaseMs`, and is
//   capped at `retryMaxMs`; there is none once retries are used up (`rateLimitRetries` for a 429, at least
//   `modelRetries`) or the error is not retryable.
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import { ConcurrencyError, EventValidationError, StoreError } from "../events/errors.ts";
import type { ModelError } from "../models/port.ts";

export type LoopLimits = {
  /** Retries after a retryable model error (so attempts = retries + 1). */
  modelRetries: number;
  /** Retries after a provider's 429 (its own allowance: a busy provider slows a fan-out, it does not fail its runs). */
  rateLimitRetries: number;
  retryBaseMs: number;
  retryMaxMs: number;
};

/** Why the log could not be written. */
export type LogError = StoreError | ConcurrencyError | EventValidationError;

export const asLogError = (e: unknown): LogError =>
  e instanceof StoreError || e instanceof ConcurrencyError || e instanceof EventValidationError
    ? e
    : new StoreError("unknown", e instanceof Error ? e.message : String(e), { cause: e });

/** A write to the log, with its failure typed. */
export const logWrite = <A>(write: () => Promise<A>): Effect.Effect<A, LogError> =>
  Effect.tryPromise({ try: write, catch: asLogError });

/** One failed model call, as recorded: `retryInMs` null means no retry follows. */
export class ModelCallFailed extends Data.TaggedError("ModelCallFailed")<{
  readonly error: ModelError;
  readonly attempt: number;
  readonly retryInMs: number | null;
}> {}

/** The delay before the retry after failed `attempt`, or null when there is none. */
export const retryDelayMs = (limits: LoopLimits, attempt: number, err: ModelError): number | null =>
  err.retryable &&
  attempt <=
    (err.reason === "rate_limited" ? Math.max(limits.modelRetries, limits.rateLimitRetries) : limits.modelRetries)
    ? Math.min(limits.retryMaxMs, Math.max(err.retryAfterMs ?? 0, limits.retryBaseMs * 2 ** (attempt - 1)))
    : null;
