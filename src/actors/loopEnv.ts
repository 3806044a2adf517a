// What a run's message loop works with (LoopEnv), and how it writes: appends, staged facts, its end, its checkpoints.
//
// Requirements:
// - Every model request of the run (a step's call, a compaction's summary) names the run's context, agent,
//   profile and model the same way (modelRequest).
// - Every write carries the run's correlation and the run as its cause.
// - The run's end is appended only while the log still shows the run open (a stop or a close may have won the race),
//   and a completion waits while an intervention is undelivered: the loop goes on instead.
// - A checkpoint waits while the context is paused (the machine's `paused`), and goes on at once otherwise.
import * as Effect from "effect/Effect";
import type { DomainEvent, RecordedEvent, RunFailureReason } from "../events/schema.ts";
import type { ChatMessage } from "../models/messages.ts";
import { type ModelPort, type ModelRequest, type ToolSpec } from "../models/port.ts";
import { type Tool, type ToolContext } from "../tools/defineTool.ts";
import type { StreamWriter } from "./streamWriter.ts";
import type { RunHandle } from "./runHandle.ts";
import type { ApprovalPort, ParkedStep } from "./approvalGate.ts";
import { logWrite, type LoopLimits } from "./loopErrors.ts";
import type { ResumePlan } from "./resumePlan.ts";
import { type WindowEnv } from "./compaction.ts";
import { type BudgetPort } from "./budgetGate.ts";
import { type GateEnv } from "./callQueue.ts";

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

/** A model request of this run: who asks (context, agent number, profile), which model and endpoint, and what. */
export const modelRequest = (
  env: LoopEnv,
  messages: ChatMessage[],
  tools: ToolSpec[],
  signal: AbortSignal,
): ModelRequest => ({
  contextId: env.handle.contextId,
  agentNumber: env.agentNumber,
  profile: env.profile,
  model: env.model.name,
  ...(env.model.baseURL ? { baseURL: env.model.baseURL } : {}),
  messages,
  tools,
  signal,
});

export type Terminal = { terminal: RecordedEvent[] };

export const append = (env: LoopEnv, events: DomainEvent[]) =>
  logWrite(() => env.writer.append(events, { correlationId: env.handle.correlationId, causationId: env.handle.runId }));

/** Records an effect that is over; it reaches the log with the next append, before the next effect. */
export const stage = (env: LoopEnv, events: DomainEvent[]) =>
  Effect.sync(() =>
    env.writer.stage(events, { correlationId: env.handle.correlationId, causationId: env.handle.runId }),
  );

/** Appends the run's end unless it already ended (a stop or a close won the race). */
export const endWith = (env: LoopEnv, event: DomainEvent) =>
  logWrite(() =>
    env.writer.exclusive(async (appendNow) =>
      env.runOpen()
        ? appendNow([event], { correlationId: env.handle.correlationId, causationId: env.handle.runId })
        : [],
    ),
  );

export const fail = (env: LoopEnv, reason: RunFailureReason, message: string) =>
  logWrite(() => env.cancelOpenJobs()).pipe(
    Effect.andThen(endWith(env, { type: "RunFailed", data: { runId: env.handle.runId, reason, message } })),
  );

/** Completes the run with `response`, unless an intervention is waiting: then the loop goes on. */
export const tryComplete = (env: LoopEnv, response: string) =>
  logWrite(() =>
    env.cancelOpenJobs().then(() =>
      env.writer.exclusive(async (appendNow): Promise<RecordedEvent[] | null> => {
        if (!env.runOpen()) return [];
        if (env.interventionPending()) return null;
        return appendNow([{ type: "RunCompleted", data: { runId: env.handle.runId, response } }], {
          correlationId: env.handle.correlationId,
          causationId: env.handle.runId,
        });
      }),
    ),
  );

/** Waits at a checkpoint while the context is paused; a context that is not (nearly always) goes on at once. */
export const waitWhilePaused = (env: LoopEnv) =>
  Effect.suspend(() =>
    env.paused()
      ? Effect.tryPromise({ try: (signal) => env.whileNotPaused(signal), catch: (e) => e }).pipe(Effect.orDie)
      : Effect.void,
  );
