// The HTTP API's request shapes: one set of zod schemas both validates requests and feeds the OpenAPI document.
// Requirements: strict objects (an unknown field is a 400 naming it), query strings coerced from text,
// context ids checked as UUIDs before any read, so a bad id is a 400 and never reaches the store.
import { z } from "zod";

export const CONTEXT_STATUSES = ["idle", "running", "stopped", "failed"] as const;

export const ContextIdParam = z.strictObject({ id: z.uuid({ error: "must be a context id (a UUID)" }) });

export const ContextsQuery = z.strictObject({
  status: z.enum(CONTEXT_STATUSES).optional(),
  root: z.uuid({ error: "must be a context id (a UUID)" }).optional(),
});

const WHOLE = "must be a whole number, 0 or more";
const budgetCount = z
  .number({ error: WHOLE })
  .int({ error: WHOLE })
  .min(0, { error: WHOLE })
  .max(Number.MAX_SAFE_INTEGER, { error: WHOLE });

/**
 * A tree's budget, or an extension of one: any of these keys, at least one (the runtime's `BudgetLimits`, with
 * messages that name the key).
 */
export const BudgetBody = z
  .strictObject({
    inputTokens: budgetCount.optional(),
    outputTokens: budgetCount.optional(),
    totalTokens: budgetCount.optional(),
    costUsd: z
      .number({ error: "must be a number of US dollars, 0 or more" })
      .min(0, { error: "must be a number of US dollars, 0 or more" })
      .max(1e12)
      .optional(),
    modelCalls: budgetCount.optional(),
    toolCalls: budgetCount.optional(),
    wallClockMs: budgetCount.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, {
    error:
      "must give at least one of inputTokens, outputTokens, totalTokens, costUsd, modelCalls, toolCalls, wallClockMs",
  });

export const CreateContextBody = z.strictObject({
  name: z.string().max(200).optional(),
  profile: z.string().max(200).optional(),
  project: z.string().max(200).optional(),
  /** What the whole tree may spend (default: the project's, else the profile's budget). */
  budget: BudgetBody.optional(),
});

export const SendMessageBody = z.strictObject({
  text: z.string().trim().min(1, { error: "must be a non-empty string" }),
  wait: z.boolean().optional(),
  /** What this message's work may spend, on top of what its tree has spent so far. */
  budget: BudgetBody.optional(),
});

/** `POST /v1/contexts/:id/budget/extend`: added to the limits of the context's tree. */
export const ExtendBudgetBody = BudgetBody;

const position = z.coerce
  .number({ error: "must be a log position (a whole number, 0 or more)" })
  .int({ error: "must be a log position (a whole number, 0 or more)" })
  .min(0, { error: "must be a log position (a whole number, 0 or more)" });

/** stop, pause and resume take no options: an empty body, or none (a field there is a 400, not ignored). */
export const NoOptionsBody = z.strictObject({});

export const ApprovalIdParam = z.strictObject({ id: z.uuid({ error: "must be an approval id (a UUID)" }) });
export const ApprovalsQuery = z.strictObject({
  contextId: z.uuid({ error: "must be a context id (a UUID)" }).optional(),
});
/** Who decides is not in the body: the server records the name of the token that sent it. */
export const ApproveBody = z.strictObject({ note: z.string().max(10_000).optional() });
export const RejectBody = z.strictObject({
  reason: z
    .string({ error: "must be a non-empty string (why)" })
    .trim()
    .min(1, { error: "must be a non-empty string (why)" })
    .max(10_000),
});

export const EventsQuery = z.strictObject({
  after: position.optional(),
  contextId: z.uuid({ error: "must be a context id (a UUID)" }).optional(),
  limit: z.coerce
    .number({ error: "must be a whole number from 1 to 10000" })
    .int({ error: "must be a whole number from 1 to 10000" })
    .min(1, { error: "must be a whole number from 1 to 10000" })
    .max(10_000, { error: "must be a whole number from 1 to 10000" })
    .optional(),
});

export const StreamQuery = z.strictObject({
  after: position.optional(),
  contextId: z.uuid({ error: "must be a context id (a UUID)" }).optional(),
});

/** A fork of the context at one of its events' log positions (`rt.fork(id, { at })`). */
export const ForkBody = z.strictObject({
  at: z
    .number({ error: "must be the log position of one of the context's events (a whole number, 1 or more)" })
    .int({ error: "must be the log position of one of the context's events (a whole number, 1 or more)" })
    .min(1, { error: "must be the log position of one of the context's events (a whole number, 1 or more)" }),
});

export const ErrorBody = z.strictObject({
  error: z.strictObject({ code: z.string(), message: z.string() }),
});

export type Validated<S extends z.ZodType> = z.infer<S>;

/** The first issue as one line that names the field: `text: must be a non-empty string`. */
export const describeIssues = (error: z.ZodError, where: string): string => {
  const issue = error.issues[0]!;
  if (issue.code === "unrecognized_keys")
    return `${issue.path.length > 0 ? issue.path.join(".") : where}: unknown field ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
  const field = issue.path.length > 0 ? issue.path.join(".") : where;
  return `${field}: ${issue.message}`;
};
