// The tool shape: a zod input, a description, and a run function that returns text or ends the run with a response.
import type { z } from "zod";
import type { ContextId, JobId, RunId } from "../events/ids.ts";
import type { RunScope } from "./delegator.ts";

/** What a tool's run gets besides its input. */
export type ToolContext = {
  contextId: ContextId;
  runId: RunId;
  agentNumber: number;
  profile: string;
  toolCallId: string;
  /** Set when the call runs as a job of `parallel`. */
  jobId?: JobId;
  /** Aborted when the run is stopped: pass it to anything slow. */
  signal: AbortSignal;
  /** Delegation tells its caller which subordinate it runs (a `parallel` job shows it as `context_id`). */
  reportSubordinate?: (contextId: string) => void;
  /** The calling run, for the built-in tools (delegation and `parallel`); tools of your own need not use it. */
  run?: RunScope;
};

/** `text` goes back to the model; `response` ends the run with that final answer. */
export type ToolOutcome = { kind: "text"; text: string } | { kind: "response"; text: string };

export type Tool<I = unknown> = {
  name: string;
  description: string;
  input: z.ZodType<I>;
  run(input: I, ctx: ToolContext): Promise<string | ToolOutcome> | string | ToolOutcome;
};

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
 */
export const defineTool = <I>(tool: Tool<I>): Tool<I> => tool;

export const asOutcome = (r: string | ToolOutcome): ToolOutcome => (typeof r === "string" ? { kind: "text", text: r } : r);
