// The tool shape: a zod input, a description, and a run function that returns text or ends the run with a response.
import type { z } from "zod";
import type { ContextId, JobId, RunId } from "../events/ids.ts";

/** What a tool's run gets besides its input. */
export type ToolContext = {
  contextId: ContextId;
  runId: RunId;
  agentNumber: number;
  profile: string;
  toolCallId: string;
  /** The step of the run whose reply asked for this call (a `parallel` job: its `parallel` call's). */
  step?: number;
  /** Set when the call runs as a job of `parallel`. */
  jobId?: JobId;
  /** Aborted when the run is stopped: pass it to anything slow. */
  signal: AbortSignal;
  /** Delegation tells its caller which subordinate it runs (a `parallel` job shows it as `context_id`). */
  reportSubordinate?: (contextId: string) => void;
  /** The W3C traceparent of this call's span when a tracer records it: a tool that calls another service passes it on. */
  traceparent?: string;
};

/** What a `needsApproval` function gets besides the call's input. */
export type ToolApprovalContext = Pick<ToolContext, "contextId" | "runId" | "agentNumber" | "profile" | "toolCallId">;

/** `text` goes back to the model; `response` ends the run with that final answer. */
export type ToolOutcome = { kind: "text"; text: string } | { kind: "response"; text: string };

export type Tool<I = unknown> = {
  name: string;
  description: string;
  input: z.ZodType<I>;
  run(input: I, ctx: ToolContext): Promise<string | ToolOutcome> | string | ToolOutcome;
  /**
   * Whether a call waits for a person's decision (`rt.approve` / `rt.reject`) before it runs: always
   * (`true`), or as this function answers for the call's parsed input. A function that throws counts as yes.
   * While a call waits, its run is parked (the context stays running, awaiting approval).
   */
  needsApproval?: boolean | ((input: I, ctx: ToolApprovalContext) => boolean | Promise<boolean>);
  /**
   * Running a call twice has the effect of running it once. A call a crash cut off (recorded as started,
   * with no result) is run again when its run resumes only if the tool says so; otherwise the model is told
   * the call may or may not have taken effect.
   */
  idempotent?: boolean;
  /**
   * How a call recorded as started without a result continues when its run resumes after a restart, for a
   * tool that records its own progress on the log (`call_subordinate` waits for the child it started,
   * `parallel` for the jobs it started) rather than doing it all again.
   */
  resume?(input: I, ctx: ToolContext): Promise<string | ToolOutcome> | string | ToolOutcome;
  /**
   * The tool's first append through its run's scope (`runScopeOf`, built-in tools only) carries its ToolCalled (and what the run staged before it),
   * so the loop does not write it alone first. Only for a tool with no effect beyond the log before that
   * append (`call_subordinate`: its child runs only after it), always or for the inputs this function says
   * (`parallel`: a start, whose jobs run only after it records them; not a cancel, which stops children).
   */
  recordsCall?: boolean | ((input: I) => boolean);
};

/** Whether this call's ToolCalled goes out with the tool's own first append (see `recordsCall`). */
export const recordsCallOf = <I>(tool: Pick<Tool<I>, "recordsCall">, input: I): boolean =>
  typeof tool.recordsCall === "function" ? tool.recordsCall(input) : tool.recordsCall === true;

/** The result of a call a restart cut off, for a tool that is neither idempotent nor able to resume. */
export const INTERRUPTED_CALL = "This tool call was interrupted by a restart; it may or may not have taken effect.";

/**
 * Whether a call a restart cut off (on the log as started, with no result) goes on: through the tool's
 * `resume`, or run again when a second run does what one does. Any other may or may not have taken
 * effect, and is answered with INTERRUPTED_CALL instead.
 */
export const goesOnAfterCut = (tool: Pick<Tool<unknown>, "resume" | "idempotent">): boolean =>
  tool.resume !== undefined || tool.idempotent === true;

/** Runs a call of `tool`; one a restart cut off (`cutOff`) goes on through the tool's `resume` when it has one. */
export const runOrResume = async <I>(
  tool: Tool<I>,
  input: I,
  ctx: ToolContext,
  cutOff: boolean,
): Promise<ToolOutcome> => asOutcome(await (cutOff && tool.resume ? tool.resume(input, ctx) : tool.run(input, ctx)));

/** An error the model can fix: it is returned to the model as the tool's result and the run goes on. */
export class RepairableToolError extends Error {
  readonly _tag = "RepairableToolError" as const;
  constructor(message: string) {
    super(message);
    this.name = "RepairableToolError";
  }
}

/** An error nobody in the conversation can fix: the run ends as failed (`tool_error`). */
export class FatalToolError extends Error {
  readonly _tag = "FatalToolError" as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FatalToolError";
  }
}

/**
 * Defines a tool the model can call.
 * @example
 * const clock = defineTool({ name: "clock", description: "The time now.", input: z.object({}), run: () => new Date().toISOString() });
 * const deploy = defineTool({ name: "deploy", description: "Deploys a service.", input: z.object({ env: z.string() }),
 *   needsApproval: ({ env }) => env === "prod", run: ({ env }) => `deployed to ${env}` });
 */
export const defineTool = <I>(tool: Tool<I>): Tool<I> => tool;

export const asOutcome = (r: string | ToolOutcome): ToolOutcome =>
  typeof r === "string" ? { kind: "text", text: r } : r;
