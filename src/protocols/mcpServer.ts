// The runtime as an MCP server: each enabled profile is one tool, `delegate_to_<profile>`, whose call runs a root.
// Requirements:
// - A call creates a root of that profile (named by `name` when given) or continues the root `context_id` names
//   (which must be a root of that profile, not running); its run is recorded like any other, its message marked
//   `via: "mcp"`, so it can be watched, approved, stopped and audited as usual.
// - The call answers when the run ends: its answer as text plus `{ contextId, runId, status, answer }`; a run
//   that fails or is stopped is an MCP tool error (`isError`) naming the reason, never a protocol error.
// - A client that cancels its request stops the run; a W3C `traceparent` in the request's `_meta` (or the HTTP
//   header of the same name) parents the run's span, so the hop is one trace.
// - Bad input (an unknown or foreign context) is a tool error and nothing is written.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { ProfileInfo, Runtime, SendResult } from "../runtime/api.ts";
import { readTraceparent } from "./traceContext.ts";

export const MCP_SERVER_NAME = "actorzero";

/** The tool name for a profile: characters MCP tool names do not allow become `_`, cut to 64. */
export const delegateToolName = (profile: string): string =>
  `delegate_to_${profile}`.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);

const Input = {
  message: z
    .string()
    .trim()
    .min(1, "message: the task must not be empty")
    .describe("The task or question for the agent."),
  context_id: z
    .string()
    .min(1)
    .optional()
    .describe("Continue this conversation (a contextId an earlier call returned) instead of starting a new one."),
  name: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe("A name for a new conversation (shown in the tree and audit)."),
};
const Output = {
  contextId: z.string(),
  runId: z.string(),
  status: z.literal("completed"),
  answer: z.string(),
};

type CallResult = {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

const toolError = (text: string): CallResult => ({ content: [{ type: "text", text }], isError: true });

const description = (p: ProfileInfo): string =>
  [
    `Delegate a task to actorzero's ${p.title} agent (profile '${p.key}') and get its answer when its run ends.`,
    p.description,
    p.context,
    "Pass the returned contextId as context_id to continue the same conversation.",
  ]
    .filter((s) => s.trim() !== "")
    .join("\n");

/** Why a run gave no answer, in one line the calling agent can act on. */
const failureText = (o: SendResult): string => {
  const where = `run ${o.runId} of context ${o.contextId}`;
  if (o.status === "stopped") return `The ${where} was stopped before it answered.`;
  return `The ${where} failed (${o.failure?.reason ?? "unknown"}): ${o.failure?.message ?? "no reason recorded"}`;
};

/** Runs one delegation: create or continue the root, start its run, answer when it ends. */
const delegate = async (
  rt: Runtime,
  profile: string,
  input: { message: string; context_id?: string | undefined; name?: string | undefined },
  call: { signal: AbortSignal; traceparent: string | undefined },
): Promise<CallResult> => {
  let contextId: string;
  if (input.context_id !== undefined) {
    const view = await rt.context(input.context_id).catch(() => null);
    if (!view || view.kind !== "root")
      return toolError(`No conversation ${input.context_id}: context_id must be a contextId an earlier call returned.`);
    if (view.profile !== profile)
      return toolError(
        `Conversation ${view.id} belongs to profile '${view.profile}'; continue it with ${delegateToolName(view.profile)}.`,
      );
    if (view.status === "running")
      return toolError(`Conversation ${view.id} is still running; wait for its answer or stop it first.`);
    contextId = view.id;
  } else {
    contextId = (await rt.createContext({ profile, ...(input.name ? { name: input.name } : {}) })).id;
  }
  const started = await rt.start(contextId, input.message, {
    via: "mcp",
    ...(call.traceparent ? { traceparent: call.traceparent } : {}),
  });
  // A client that gives up on the call stops the run it started (the log says so, as for any stop).
  const onAbort = () => void rt.stop(contextId).catch(() => undefined);
  call.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const outcome = await started.ended;
    if (outcome.status !== "completed") return toolError(failureText(outcome));
    const answer = outcome.response ?? "";
    return {
      content: [{ type: "text", text: answer }],
      structuredContent: { contextId, runId: outcome.runId, status: "completed", answer },
    };
  } catch (e) {
    return toolError(`The run ${started.runId} of context ${contextId} did not end here: ${(e as Error).message}`);
  } finally {
    call.signal.removeEventListener("abort", onAbort);
  }
};

/**
 * An MCP server offering `rt`'s enabled profiles as tools. Connect it to a transport (stdio, or a streamable
 * HTTP transport per request); it holds no state of its own, so one per connection or per request is fine.
 *
 * @example
 * await mcpServerFor(rt).connect(new StdioServerTransport());
 */
export const mcpServerFor = (rt: Runtime): McpServer => {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: "0.1.0" }, { capabilities: { tools: {} } });
  for (const p of rt.profiles()) {
    server.registerTool(
      delegateToolName(p.key),
      { title: `Delegate to ${p.title}`, description: description(p), inputSchema: Input, outputSchema: Output },
      async (input, extra) => {
        try {
          const headers = extra.requestInfo?.headers as Record<string, string | string[] | undefined> | undefined;
          const traceparent =
            readTraceparent(extra._meta?.["traceparent"]) ?? readTraceparent(headers?.["traceparent"]);
          return await delegate(rt, p.key, input, { signal: extra.signal, traceparent });
        } catch (e) {
          return toolError((e as Error).message);
        }
      },
    );
  }
  return server;
};
