// Where a run a gone process left unfinished picks up: a pure reading of that run's recorded facts.
//
// Requirements:
// - The run continues at its last recorded step. A recorded reply is reused, never requested again;
//   a model call recorded without a reply (or failure) is made again as the next attempt of its step.
// - In the step being continued, tool calls with a recorded result are not run again; calls recorded
//   as started without a result are listed (`started`) for the loop to resume, re-run or answer.
// - The loop's reply guards (repeated, unusable) and the interventions still undelivered are what the
//   uninterrupted loop would have held at that point.
// - Pure: facts in, a plan out.
import type { RecordedEvent } from "../events/schema.ts";
import { argumentsAsString } from "../models/messages.ts";
import type { Decision } from "./approvalGate.ts";

/** What a tool call the model asked for looks like once recorded (ModelReplied's `toolCalls`). */
export type RecordedCall = { id: string; name: string; arguments: unknown };

/** The loop's memory of earlier replies: what a repeat is measured against, and which warnings were given. */
export type ReplyGuards = { previousReply: string | null; warnedRepeat: boolean; warnedUnusable: boolean };

export const NO_GUARDS: ReplyGuards = { previousReply: null, warnedRepeat: false, warnedUnusable: false };

/** The key two replies are compared by: the same text and the same calls (names and arguments) are a repeat. */
export const replyKey = (text: string | null, calls: readonly RecordedCall[]): string =>
  JSON.stringify({ text, calls: calls.map((c) => [c.name, argumentsAsString(c.arguments)]) });

/** The guards after one more reply, as the loop applies them (a reply that ends the run leaves them unread). */
export const guardsAfter = (g: ReplyGuards, text: string | null, calls: readonly RecordedCall[]): ReplyGuards => {
  if (text === null && calls.length === 0) return { ...g, warnedUnusable: true };
  const key = replyKey(text, calls);
  if (key === g.previousReply) return { ...g, warnedUnusable: false, warnedRepeat: true };
  return { previousReply: key, warnedRepeat: false, warnedUnusable: false };
};

/** A model call of the continued step whose last attempt failed: retried as the loop would, or given up. */
export type FailedAttempt = {
  attempt: number;
  reason: string;
  message: string;
  retryable: boolean;
  retryInMs: number | null;
};

export type ResumePlan = {
  /** The step the run continues at. */
  step: number;
  /** That step's recorded reply, reused as it is; null when its model call is still to be made. */
  reply: { text: string | null; calls: RecordedCall[] } | null;
  /** The attempt the step's model call is made as (when `reply` is null). */
  attempt: number;
  /** The last attempt was recorded as made with neither reply nor failure: the call is made again, and may be billed twice. */
  repeatsModelCall: boolean;
  /** The step's last attempt failed: the loop retries after its recorded delay, or gives up as it would have. */
  failed: FailedAttempt | null;
  /** Tool calls of the step whose result is on the log. */
  answered: ReadonlySet<string>;
  /** Tool calls of the step recorded as started without a result. */
  started: ReadonlySet<string>;
  guards: ReplyGuards;
  /** Interventions recorded after the run's last model call, not yet delivered to the model. */
  undelivered: number;
  /** Decisions recorded on the step's approval requests, by tool call (filled in by the runtime, which reads approvals). */
  decisions: ReadonlyMap<string, Decision>;
};

/** The plan for the run whose facts (its own, in log order, from its RunStarted) are given. */
export const planResume = (facts: readonly RecordedEvent[]): ResumePlan => {
  let step = 1;
  let attempt = 0;
  let called = false;
  let failed: FailedAttempt | null = null;
  let reply: ResumePlan["reply"] = null;
  let guards = NO_GUARDS;
  let undelivered = 0;
  let answered = new Set<string>();
  let started = new Set<string>();
  for (const f of facts) {
    switch (f.type) {
      case "ModelCalled":
        if (f.data.step !== step) {
          step = f.data.step;
          reply = null;
          answered = new Set();
          started = new Set();
        }
        attempt = f.data.attempt;
        called = true;
        failed = null;
        undelivered = 0;
        break;
      case "ModelCallFailed":
        called = false;
        failed = {
          attempt: f.data.attempt,
          reason: f.data.reason,
          message: f.data.message,
          retryable: f.data.retryable,
          retryInMs: f.data.retryInMs,
        };
        break;
      case "ModelReplied":
        called = false;
        reply = { text: f.data.text, calls: f.data.toolCalls };
        guards = guardsAfter(guards, f.data.text, f.data.toolCalls);
        break;
      case "ToolCalled":
        if (!answered.has(f.data.toolCallId)) started.add(f.data.toolCallId);
        break;
      case "ToolReturned":
      case "ToolFailed":
        started.delete(f.data.toolCallId);
        answered.add(f.data.toolCallId);
        break;
      case "InterventionReceived":
        undelivered += 1;
        break;
      default:
        break;
    }
  }
  // No ModelCalled at all cannot be (the run's start carries its first); the plan then calls step 1 afresh.
  return {
    step,
    reply,
    attempt: reply !== null ? attempt : failed ? failed.attempt + 1 : Math.max(1, called ? attempt + 1 : attempt),
    repeatsModelCall: reply === null && called,
    failed: reply === null ? failed : null,
    answered,
    started,
    guards,
    undelivered,
    decisions: new Map(),
  };
};
