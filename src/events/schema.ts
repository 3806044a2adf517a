// Every fact the log can hold: one zod discriminated union, types inferred from it (DESIGN §3).
import { z } from "zod";
import { ApprovalId, ContextId, EventId, JobId, RunId } from "./ids.ts";
import { RemoteTaskAccepted, RemoteTaskSent } from "./remoteFacts.ts";
import {
  BudgetAmount,
  BudgetLimits,
  ContextKind,
  Count,
  JobStatus,
  ModelErrorReason,
  ModelOverride,
  RunFailureReason,
  Superior,
  Text,
  ToolCallRecord,
  Usage,
} from "./factValues.ts";

// The values facts carry (factValues.ts), for readers of this file's types.
export {
  BudgetAmount,
  BudgetLimits,
  ContextKind,
  JobStatus,
  ModelErrorReason,
  ModelOverride,
  RunFailureReason,
  Superior,
  ToolCallRecord,
  Usage,
} from "./factValues.ts";

const event = <T extends string, S extends z.ZodRawShape>(type: T, data: S) =>
  z.object({ type: z.literal(type), data: z.object(data) });

export const ContextCreated = event("ContextCreated", {
  contextId: ContextId,
  name: Text,
  label: Text,
  profile: Text,
  project: Text.nullable(),
  agentNumber: Count,
  depth: Count,
  kind: ContextKind,
  parentContextId: ContextId.nullable(),
  parentAgentNumber: Count.nullable(),
  /** The root of this context's delegation tree (itself for a root): usage rolls up to it. */
  rootContextId: ContextId,
  slot: Text.nullable(),
  modelOverride: ModelOverride.nullable(),
  /** A fork (rt.fork): the context and the log position its history was copied from. Absent otherwise. */
  forkedFrom: z.object({ contextId: ContextId, position: z.number().int().positive() }).optional(),
  /** A root created with a budget: its tree's first limits (as a BudgetSet would set them). Absent otherwise. */
  budget: BudgetLimits.optional(),
});
export const ContextRenamed = event("ContextRenamed", { name: Text, label: Text });
export const ModelOverrideSet = event("ModelOverrideSet", { modelOverride: ModelOverride.nullable() });
export const MessageReceived = event("MessageReceived", {
  runId: RunId,
  text: Text,
  sender: z.enum(["user", "superior"]),
  /** A user's message that came over an agent protocol (MCP or A2A) rather than the API or CLI; absent otherwise. */
  via: z.enum(["mcp", "a2a"]).optional(),
});
export const InterventionReceived = event("InterventionReceived", { runId: RunId, text: Text });
export const RunStarted = event("RunStarted", { runId: RunId, model: Text, superior: Superior.nullable() });
export const ModelCalled = event("ModelCalled", { runId: RunId, step: Count, attempt: Count, model: Text });
export const ModelReplied = event("ModelReplied", {
  runId: RunId,
  step: Count,
  text: Text.nullable(),
  toolCalls: z.array(ToolCallRecord),
  usage: Usage.nullable(),
  /** A budgeted call's reservation settled to what it spent (absent without a budget, and on older logs). */
  settles: z.object({ reservationId: z.string().min(1), spent: BudgetAmount }).optional(),
});
export const ModelCallFailed = event("ModelCallFailed", {
  runId: RunId,
  step: Count,
  attempt: Count,
  reason: ModelErrorReason,
  message: Text,
  retryable: z.boolean(),
  retryInMs: Count.nullable(),
});
/** A warning the loop gives the model (a repeated or unusable reply); it reaches the model as a user message. */
export const ModelWarned = event("ModelWarned", { runId: RunId, step: Count, text: Text });
export const ToolCalled = event("ToolCalled", {
  runId: RunId,
  step: Count,
  toolCallId: z.string(),
  name: Text,
  arguments: z.unknown(),
});
export const ToolReturned = event("ToolReturned", { runId: RunId, toolCallId: z.string(), name: Text, result: Text });
export const ToolFailed = event("ToolFailed", {
  runId: RunId,
  toolCallId: z.string(),
  name: Text,
  error: Text,
  repairable: z.boolean(),
});
export const SubordinateCalled = event("SubordinateCalled", {
  runId: RunId,
  toolCallId: z.string(),
  childContextId: ContextId,
  fresh: z.boolean(),
  jobId: JobId.nullable(),
});
export const SubordinateReturned = event("SubordinateReturned", {
  runId: RunId,
  toolCallId: z.string(),
  childContextId: ContextId,
  outcome: z.enum(["completed", "stopped", "failed"]),
  result: Text.nullable(),
  reason: Text.nullable(),
});
export const RunCompleted = event("RunCompleted", { runId: RunId, response: Text });
export const RunStopped = event("RunStopped", { runId: RunId, by: z.enum(["user", "superior"]) });
export const RunFailed = event("RunFailed", { runId: RunId, reason: RunFailureReason, message: Text });
/** `reason`: why the run's own end could not be recorded, when the runtime knew (absent for a crash). */
export const RunInterrupted = event("RunInterrupted", { runId: RunId, reason: Text.optional() });
export const ContextPaused = event("ContextPaused", { runId: RunId.nullable() });
export const ContextResumed = event("ContextResumed", { runId: RunId.nullable() });
export const ParallelJobStarted = event("ParallelJobStarted", {
  runId: RunId,
  toolCallId: z.string(),
  jobId: JobId,
  toolName: Text,
  arguments: z.unknown(),
});
export const ParallelJobFinished = event("ParallelJobFinished", {
  runId: RunId,
  jobId: JobId,
  status: JobStatus,
  result: Text.nullable(),
  error: Text.nullable(),
  contextId: ContextId.nullable(),
});
/**
 * A tool call that needs a person's decision before it runs; the run waits (parks) until one is recorded.
 * `expiresAt` is when the runtime denies it by itself ("timed out"), null when it waits for ever.
 */
export const ApprovalRequested = event("ApprovalRequested", {
  approvalId: ApprovalId,
  runId: RunId,
  step: Count,
  toolCallId: z.string(),
  tool: Text,
  arguments: z.unknown(),
  contextId: ContextId,
  agentNumber: Count,
  expiresAt: Text.nullable(),
  /** Set when the call is a `parallel` job's (its `toolCallId` is then the job id): the job waits, not the run. */
  jobId: JobId.optional(),
});
/** Who let the parked call run, and why. */
export const ApprovalGranted = event("ApprovalGranted", {
  approvalId: ApprovalId,
  runId: RunId,
  toolCallId: z.string(),
  by: Text.min(1),
  note: Text.nullable(),
});
/** Who refused the parked call and why; the model gets the reason as a repairable tool error. */
export const ApprovalDenied = event("ApprovalDenied", {
  approvalId: ApprovalId,
  runId: RunId,
  toolCallId: z.string(),
  by: Text.min(1),
  reason: Text.min(1),
});

/**
 * A stop, pause or resume asked of a run that another process drives (on a shared PostgreSQL log). Recorded in
 * the stream `<contextId>:control` (never the context's own, which only its driver writes); the driver acts on it
 * and records the outcome (RunStopped by the user, ContextPaused, ContextResumed) in the context's stream.
 */
export const RunControlRequested = event("RunControlRequested", {
  contextId: ContextId,
  runId: RunId,
  action: z.enum(["stop", "pause", "resume"]),
});

/**
 * Older parts of a context's history replaced, in what the model is sent, by a summary (docs/compaction.md).
 * `topics`: the runs (topics) the summary stands for, every earlier compaction's included; `elided`: tool results
 * of the current run replaced by a short note naming their ToolReturned/ToolFailed (by tool call id). The summary
 * came from one model call (or several, chunked), recorded here: its model, usage and duration. The log keeps every
 * original message; only the model's view changes.
 */
export const HistoryCompacted = event("HistoryCompacted", {
  runId: RunId,
  step: Count,
  model: Text,
  topics: z.array(RunId),
  summary: Text,
  elided: z.array(z.object({ toolCallId: z.string(), tokens: Count })),
  tokensBefore: Count,
  tokensAfter: Count,
  /** Why it ran: the count passed the threshold (`threshold`) or the endpoint refused the request as too long (`endpoint`). */
  trigger: z.enum(["threshold", "endpoint"]),
  usage: Usage.nullable(),
  calls: Count,
  durationMs: Count,
});

// The budget facts below (but BudgetExhausted and BudgetRestored) live in the stream `<rootContextId>:budget`, appended
// with the version their check read, so every reservation of a tree is checked against all the others.
/** The tree's limits from now on (absolute: a per-message budget is added to what was spent when it arrived). */
export const BudgetSet = event("BudgetSet", { rootContextId: ContextId, limits: BudgetLimits });
/** More budget: each key added to the limit (a key with no limit yet gets one). */
export const BudgetExtended = event("BudgetExtended", { rootContextId: ContextId, more: BudgetLimits });
/** A model call's reservation, made before the call: its counted input plus its most output. */
export const BudgetReserved = event("BudgetReserved", {
  reservationId: z.string().min(1),
  contextId: ContextId,
  runId: RunId,
  step: Count,
  amount: BudgetAmount,
});
/**
 * The reservation replaced by what the call really spent, when no reply settles it: zeros for a call that never got
 * a reply, the counted input for one a stop cut off, a reply recorded without `settles` (older logs, a takeover).
 */
export const BudgetSettled = event("BudgetSettled", { reservationId: z.string().min(1), spent: BudgetAmount });
/**
 * In the run's own stream: its next model call did not fit the tree's budget; the run parks (like a run awaiting
 * approval, `exhaustionId` in its awaited list) until the budget is extended.
 */
export const BudgetExhausted = event("BudgetExhausted", {
  exhaustionId: z.string().min(1),
  runId: RunId,
  step: Count,
  rootContextId: ContextId,
  /** The first limit the call would have passed. */
  limit: z.enum(["inputTokens", "outputTokens", "totalTokens", "costUsd", "modelCalls", "toolCalls", "wallClockMs"]),
  limits: BudgetLimits,
  spent: BudgetAmount,
  reserved: BudgetAmount,
  asked: BudgetAmount,
});
/** In the run's own stream: the budget was extended, and the parked run goes on (it reserves again). */
export const BudgetRestored = event("BudgetRestored", { exhaustionId: z.string().min(1), runId: RunId });

/**
 * A model call waits its turn: the runtime's or its preset's concurrency cap is full (or its provider's rate limit
 * holds it). The context shows `queued` until ModelCallAdmitted (or the run's end: a stop takes it out of the queue).
 */
export const ModelCallQueued = event("ModelCallQueued", {
  runId: RunId,
  step: Count,
  attempt: Count,
  /** The preset whose limits apply; null for a model given by name (the runtime's cap only). */
  preset: Text.nullable(),
  /** Calls that were waiting before this one. */
  ahead: Count,
});
/** The queued call got its place and is sent now. */
export const ModelCallAdmitted = event("ModelCallAdmitted", {
  runId: RunId,
  step: Count,
  attempt: Count,
  waitedMs: Count,
});

/** The union of every fact; `type` picks the schema. */
export const DomainEvent = z.discriminatedUnion("type", [
  ContextCreated,
  ContextRenamed,
  ModelOverrideSet,
  MessageReceived,
  InterventionReceived,
  RunStarted,
  ModelCalled,
  ModelReplied,
  ModelCallFailed,
  ModelWarned,
  ToolCalled,
  ToolReturned,
  ToolFailed,
  SubordinateCalled,
  SubordinateReturned,
  RunCompleted,
  RunStopped,
  RunFailed,
  RunInterrupted,
  ContextPaused,
  ContextResumed,
  ParallelJobStarted,
  ParallelJobFinished,
  ApprovalRequested,
  ApprovalGranted,
  ApprovalDenied,
  RunControlRequested,
  HistoryCompacted,
  BudgetSet,
  BudgetExtended,
  BudgetReserved,
  BudgetSettled,
  BudgetExhausted,
  BudgetRestored,
  ModelCallQueued,
  ModelCallAdmitted,
  RemoteTaskSent,
  RemoteTaskAccepted,
]);
export type DomainEvent = z.infer<typeof DomainEvent>;
export type EventType = DomainEvent["type"];
export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;
export type DataOf<T extends EventType> = EventOf<T>["data"];

export const EVENT_TYPES = DomainEvent.options.map((o) => o.shape.type.value) as EventType[];

/** Terminal events of a run: every run ends in exactly one of these. */
export const RUN_TERMINAL_TYPES = ["RunCompleted", "RunStopped", "RunFailed", "RunInterrupted"] as const;
export type RunTerminalType = (typeof RUN_TERMINAL_TYPES)[number];
export const isRunTerminal = (e: DomainEvent): e is EventOf<RunTerminalType> =>
  (RUN_TERMINAL_TYPES as readonly string[]).includes(e.type);

/** The facts of a tool call's approval. */
export const APPROVAL_TYPES = ["ApprovalRequested", "ApprovalGranted", "ApprovalDenied"] as const;
export type ApprovalType = (typeof APPROVAL_TYPES)[number];
export const isApprovalFact = <E extends DomainEvent>(e: E): e is Extract<E, { type: ApprovalType }> =>
  (APPROVAL_TYPES as readonly string[]).includes(e.type);

/** Correlation: the root run a fact belongs to; causation: the event or tool call that led to it. */
export const EventMetadata = z.object({
  correlationId: z.string().nullable(),
  causationId: z.string().nullable(),
  actor: z.string().nullable(),
  /** A delegated run's start: the W3C trace context of its caller's tool span (absent when nobody traces). */
  traceparent: z.string().optional(),
});
export type EventMetadata = z.infer<typeof EventMetadata>;

export const emptyMetadata: EventMetadata = { correlationId: null, causationId: null, actor: null };

/** A fact as it is read back: the domain event plus where and when the log put it. */
export type RecordedEvent = DomainEvent & {
  globalPosition: number;
  streamId: ContextId;
  streamVersion: number;
  eventId: EventId;
  schemaVersion: number;
  metadata: EventMetadata;
  recordedAt: string;
};

/** A fact to append: the event id is optional (made fresh when absent) and makes re-appends idempotent. */
export type NewEvent = DomainEvent & { eventId?: EventId; metadata?: Partial<EventMetadata> };
