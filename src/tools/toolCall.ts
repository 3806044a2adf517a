// The one path of every tool call: the loop's, each `parallel` job's, a resumed call or job, a subordinate's.
//
// Requirements:
// - In this order: the tool is looked up (an unknown one is the model's to fix), its arguments are parsed
//   (references expanded, the tool's zod input), the approval policy is asked, then the tool runs, or
//   resumes when a restart cut it off; whatever it throws is mapped to what the model is told.
// - A call that needs approval and has no decision does not run: the caller records the request (the loop
//   parks its run, a job waits for the decision) and calls again with the decision. A denied call does not
//   run; the model gets who denied it and why.
// - A call a restart cut off (`cutOff`) goes on only through the tool's `resume` or when it is idempotent;
//   otherwise it is answered with INTERRUPTED_CALL. `pastApproval` says the call's record proves it passed
//   its approval (the loop's ToolCalled is written only then); a job's start proves nothing, so a cut-off
//   job is asked again and may still wait.
// - Errors: a RepairableToolError is the tool's answer word for word, as is why an aborted call ended; a
//   FatalToolError ends the loop's run (a job ends as an error); anything else thrown is
//   "Tool '<name>' failed: <message>".
// - The caller keeps only its recording: `starting` runs once, right before the tool can have an effect.
import { type ApprovalPort, type Decision, deniedText } from "./approval.ts";
import { parseToolArguments } from "./arguments.ts";
import {
  FatalToolError,
  goesOnAfterCut,
  INTERRUPTED_CALL,
  RepairableToolError,
  runOrResume,
  type Tool,
  type ToolContext,
  type ToolOutcome,
} from "./defineTool.ts";

/** A tool call as the model asked for it (or as a `parallel` job names it). */
export type ToolCallRequest = { id: string; name: string; arguments: unknown };

/** What a call's path needs from the run it belongs to. */
export type ToolCallEnv = {
  tools: ReadonlyMap<string, Tool<unknown>>;
  /** The stored result a `§§result(<tool call id>)` reference names. */
  resolveReference: (toolCallId: string) => string | undefined;
  approvals: Pick<ApprovalPort, "needed">;
  /** The context the tool runs with (aborted with the call). */
  context: (signal: AbortSignal) => ToolContext;
  signal: AbortSignal;
};

export type ToolCallOptions = {
  /** The decision recorded for this call, when it waited for one. */
  decision?: Decision | undefined;
  /** On the log as started with no result: a restart cut it off. */
  cutOff?: boolean;
  /** The call's record shows it passed its approval (or needed none). */
  pastApproval?: boolean;
  /** Right before the tool runs: the caller records the call. */
  starting?: (tool: Tool<unknown>, input: unknown) => Promise<void>;
};

export type ToolCallResult =
  | { kind: "returned"; outcome: ToolOutcome }
  /** `ran`: whether the tool was started (`starting` ran); `fatal`: nobody in the conversation can fix it. */
  | { kind: "failed"; error: string; fatal: boolean; ran: boolean }
  /** The policy asks for a decision and there is none yet: nothing ran. */
  | { kind: "needs_approval"; tool: Tool<unknown>; input: unknown };

export const toolNotFound = (name: string, tools: ReadonlyMap<string, Tool<unknown>>) =>
  `Tool '${name}' not found. Available tools: ${[...tools.keys()].sort().join(", ")}.`;

const refused = (error: string): ToolCallResult => ({ kind: "failed", error, fatal: false, ran: false });

/** The call's path from the model's words to its result (see the requirements above). */
export const callTool = async (
  env: ToolCallEnv,
  call: ToolCallRequest,
  options: ToolCallOptions = {},
): Promise<ToolCallResult> => {
  const tool = env.tools.get(call.name);
  if (!tool) return refused(toolNotFound(call.name, env.tools));
  const args = parseToolArguments(tool, call.arguments, env.resolveReference);
  if (!args.ok) return refused(args.error);
  const { decision, cutOff = false } = options;
  if (decision === undefined && !options.pastApproval && (await env.approvals.needed(tool, args.value, call.id))) {
    return { kind: "needs_approval", tool, input: args.value };
  }
  if (decision && !decision.granted) return refused(deniedText(decision));
  if (cutOff && !goesOnAfterCut(tool)) return refused(INTERRUPTED_CALL);
  await options.starting?.(tool, args.value);
  try {
    return { kind: "returned", outcome: await runOrResume(tool, args.value, env.context(env.signal), cutOff) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof FatalToolError) return { kind: "failed", error: message, fatal: true, ran: true };
    // A repairable error is the tool's answer, word for word, and so is why an aborted call (a stop, a cancel)
    // ended; anything else thrown is reported as a failure of the tool.
    const asIs = err instanceof RepairableToolError || env.signal.aborted;
    return {
      kind: "failed",
      error: asIs ? message : `Tool '${call.name}' failed: ${message}`,
      fatal: false,
      ran: true,
    };
  }
};
