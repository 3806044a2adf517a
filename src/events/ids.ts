// Branded ids: a job id cannot be passed where a context id is expected.
import { z } from "zod";

export const ContextId = z.string().min(1).brand<"ContextId">();
export type ContextId = z.infer<typeof ContextId>;

export const RunId = z.string().min(1).brand<"RunId">();
export type RunId = z.infer<typeof RunId>;

export const EventId = z.uuid().brand<"EventId">();
export type EventId = z.infer<typeof EventId>;

export const JobId = z.string().min(1).brand<"JobId">();
export type JobId = z.infer<typeof JobId>;

export const ToolCallId = z.string().min(1).brand<"ToolCallId">();
export type ToolCallId = z.infer<typeof ToolCallId>;

/** A pending approval: a UUID, so a decision cannot name something else by accident. */
export const ApprovalId = z.uuid().brand<"ApprovalId">();
export type ApprovalId = z.infer<typeof ApprovalId>;

/** Casts for ids made by the runtime itself (already known to be valid). */
export const asContextId = (s: string) => s as ContextId;
export const asRunId = (s: string) => s as RunId;
export const asEventId = (s: string) => s as EventId;
export const asJobId = (s: string) => s as JobId;
export const asToolCallId = (s: string) => s as ToolCallId;
export const asApprovalId = (s: string) => s as ApprovalId;
