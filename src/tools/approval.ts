// Which tool calls wait for a person's decision before they run: the tool's own `needsApproval`, and the configured lists.
//
// Requirements:
// - A call needs approval when the tool says so (`true`, or its function answers true for the call's
//   input) or when a configured list (runtime, profile, project) names the tool, exactly or by a prefix
//   ending in `*` (an MCP server's tools are `<server>__<tool>`, so `github__*` names them all).
// - A `needsApproval` function that throws or answers something other than a boolean counts as "needs
//   approval": a check that cannot answer must not let a sensitive call through.
// - Options are checked with zod at start: a bad list or timeout is a refusal naming the field.
import { z } from "zod";
import { ApprovalList } from "../models/presets.ts";
import type { Tool, ToolApprovalContext } from "./defineTool.ts";

/** `createRuntime({ approvals })`: tools needing approval in every context, and how long a decision may take. */
export const ApprovalOptions = z
  .object({
    tools: ApprovalList.optional(),
    /** After this many milliseconds a pending approval is denied with the reason "timed out"; none by default. */
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();
export type ApprovalOptions = z.infer<typeof ApprovalOptions>;

/** Whether `list` names `toolName`, exactly or by a `prefix*` entry. */
export const listNames = (list: readonly string[], toolName: string): boolean =>
  list.some((entry) => (entry.endsWith("*") ? toolName.startsWith(entry.slice(0, -1)) : entry === toolName));

/** Whether this call of `tool` must wait for a decision; `configured` is the context's list (see `approvalListFor`). */
export const callNeedsApproval = async (
  tool: Pick<Tool<unknown>, "name" | "needsApproval">,
  input: unknown,
  ctx: ToolApprovalContext,
  configured: readonly string[],
): Promise<boolean> => {
  if (listNames(configured, tool.name)) return true;
  const own = tool.needsApproval;
  if (own === undefined || own === false) return false;
  if (own === true) return true;
  try {
    return (await own(input, ctx)) !== false;
  } catch {
    return true;
  }
};

/** A person's decision on one call that waited. */
export type Decision = { granted: true; by: string } | { granted: false; by: string; reason: string };

/** What the model is told about a denied call: who denied it and why (a repairable tool error). */
export const deniedText = (d: Extract<Decision, { granted: false }>): string =>
  `Not run: ${d.by} denied this call: ${d.reason}`;

/** The approval policy as a run's tool calls ask it: one port for the loop and for `parallel`'s jobs. */
export type ApprovalPort = {
  /** Whether this call waits for a decision (its tool's `needsApproval` or a configured list). */
  needed(tool: Tool<unknown>, input: unknown, toolCallId: string): Promise<boolean>;
  /** A fresh approval id, and when it times out (null: never). */
  request(): { approvalId: string; expiresAt: string | null };
};
