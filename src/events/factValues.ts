// The values the log's facts carry (schema.ts): overrides, usage, tool calls, failure reasons, who asked for a run,
// and a budget's limits and amounts. Each a zod schema with its type inferred from it.
import { z } from "zod";
import { ContextId, JobId, RunId } from "./ids.ts";

export const Text = z.string();
export const Count = z.number().int().nonnegative();

export const ModelOverride = z.union([
  z.object({ preset: z.string().min(1) }).strict(),
  z.object({ model: z.string().min(1), baseURL: z.string().optional() }).strict(),
]);
export type ModelOverride = z.infer<typeof ModelOverride>;

export const Usage = z.object({ inputTokens: Count, outputTokens: Count });
export type Usage = z.infer<typeof Usage>;

export const ToolCallRecord = z.object({ id: z.string(), name: z.string(), arguments: z.unknown() });
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

/** `remote`: a subordinate whose runs are tasks of another A2A agent (its profile's `remote`), not local actors. */
export const ContextKind = z.enum(["root", "subordinate", "remote"]);
export type ContextKind = z.infer<typeof ContextKind>;

/** Why a model call failed; `aborted` is a stop arriving during the call. */
export const ModelErrorReason = z.enum([
  "rate_limited",
  "timeout",
  "server_error",
  "connection",
  "authentication",
  "bad_request",
  "invalid_output",
  "aborted",
  "unknown",
  /** The request did not fit the model's context window (the endpoint's verdict, or the runtime's count). */
  "context_overflow",
]);
export type ModelErrorReason = z.infer<typeof ModelErrorReason>;

export const RunFailureReason = z.enum([
  "model_error",
  "repeated_reply",
  "unusable_replies",
  "tool_error",
  "interrupted",
  "internal",
  /** The history could not be compacted into the model's context window (the message says what did not fit). */
  "context_overflow",
  /** A remote subordinate's task failed, was rejected or canceled there, or its agent could not be reached. */
  "remote_error",
]);
export type RunFailureReason = z.infer<typeof RunFailureReason>;

export const JobStatus = z.enum(["pending", "running", "success", "error", "cancelled", "timeout", "interrupted"]);
export type JobStatus = z.infer<typeof JobStatus>;

/** Who asked for a run: a user, or a superior context's `call_subordinate` tool call. */
export const Superior = z.object({
  contextId: ContextId,
  runId: RunId,
  toolCallId: z.string(),
  jobId: JobId.nullable(),
});
export type Superior = z.infer<typeof Superior>;

/** Limits of a delegation tree's budget: any of these, each a ceiling on what the whole tree spends. */
export const BudgetLimits = z
  .object({
    inputTokens: Count.optional(),
    outputTokens: Count.optional(),
    totalTokens: Count.optional(),
    costUsd: z.number().nonnegative().optional(),
    modelCalls: Count.optional(),
    toolCalls: Count.optional(),
    wallClockMs: Count.optional(),
  })
  .strict();
export type BudgetLimits = z.infer<typeof BudgetLimits>;
/** What one model call reserves, or what it spent. */
export const BudgetAmount = z.object({
  inputTokens: Count,
  outputTokens: Count,
  costUsd: z.number().nonnegative(),
  modelCalls: Count,
  toolCalls: Count,
});
export type BudgetAmount = z.infer<typeof BudgetAmount>;
