// Turn builders and strict scripts for the scripted model: what a test writes instead of raw ModelTurns.
import { ModelError, type ModelRequest, type ModelTurn } from "../models/port.ts";
import type { ModelErrorReason } from "../events/schema.ts";
import { queuedModel, type ScriptedModel, type ScriptedTurn } from "../models/scripted.ts";

type Usage = { inputTokens: number; outputTokens: number };
type TurnOptions = { id?: string; usage?: Usage };

let callSeq = 0;
/** A fresh tool call id, unique in this process (`call_<tool>_<n>`). */
export const nextCallId = (tool: string): string => `call_${tool.replace(/[^A-Za-z0-9_]/g, "")}_${++callSeq}`;

/** A final answer (no tool calls). */
export const reply = (text: string, usage?: Usage): ModelTurn => (usage ? { text, usage } : { text });

/**
 * One tool call, its arguments as the JSON string a real model sends (pass a string to send it as is,
 * invalid JSON included).
 * @example callTool("search", { query: "pglite" })
 */
export const callTool = (name: string, args: unknown = {}, options: TurnOptions = {}): ModelTurn => ({
  toolCalls: [
    { id: options.id ?? nextCallId(name), name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
  ],
  ...(options.usage ? { usage: options.usage } : {}),
});

export type DelegateArgs = {
  message: string;
  profile?: string;
  reset?: boolean | string;
  context_id?: string;
  name?: string;
};

/**
 * A `call_subordinate` call (DESIGN §5).
 * @example delegate({ message: "summarise the doc", profile: "researcher", reset: true })
 */
export const delegate = (args: DelegateArgs, options: TurnOptions = {}): ModelTurn =>
  callTool("call_subordinate", args, options);

/** A final answer through the `response` tool. */
export const respond = (text: string, options: TurnOptions = {}): ModelTurn => callTool("response", { text }, options);

const RETRYABLE: ReadonlySet<ModelErrorReason> = new Set(["rate_limited", "timeout", "server_error", "connection"]);

/**
 * A failed model call: queue it as a turn and the call throws it. Retryable by default for
 * rate limits, timeouts, server and connection errors (the loop then retries), else not.
 * @example scriptByAgent({ A1: [fail("authentication")] }) // A1's run fails with model_error
 */
export const fail = (
  reason: ModelErrorReason = "server_error",
  options: { message?: string; retryable?: boolean; retryAfterMs?: number } = {},
): ModelError =>
  new ModelError(reason, options.message ?? `scripted ${reason}`, options.retryable ?? RETRYABLE.has(reason), {
    ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
  });

export type AgentKey = `A${number}` | number;

export type AgentScript = ScriptedModel & {
  /** The requests one agent number received, in order. */
  requestsOf(agent: AgentKey): ModelRequest[];
  /** Turns not yet used, per agent (`A0`, `A1`, …). */
  remaining(): Record<string, number>;
  /** Throws when any agent has turns left, or when a call came that had no turn (even if the runtime swallowed it). */
  assertConsumed(): void;
};

const keyOf = (agent: AgentKey): string => (typeof agent === "number" ? `A${agent}` : agent);

/**
 * A model scripted per agent number: each call from an `A<n>` context takes the next turn of `A<n>`'s
 * queue (across all contexts of that number, in call order). A call with no turn left fails loudly;
 * `assertConsumed()` also fails when turns were never requested.
 *
 * @example
 * const model = scriptByAgent({
 *   A0: [delegate({ message: "find the answer" }), (req) => reply(`A1 said: ${req.messages.at(-1)?.content}`)],
 *   A1: [reply("42")],
 * });
 * await rt.send(root.id, "go");
 * model.assertConsumed();
 */
export const scriptByAgent = (turns: Partial<Record<AgentKey, readonly ScriptedTurn[]>>): AgentScript => {
  const queues = new Map<string, ScriptedTurn[]>();
  const total = new Map<string, number>();
  for (const [k, v] of Object.entries(turns)) {
    const key = /^\d+$/.test(k) ? `A${k}` : k;
    queues.set(key, [...(v ?? [])]);
    total.set(key, v?.length ?? 0);
  }
  const { unexpected, ...model } = queuedModel(
    (request) => queues.get(`A${request.agentNumber}`)?.shift(),
    (request) => {
      const key = `A${request.agentNumber}`;
      return (
        `scriptByAgent: unexpected model call from ${key} (context ${request.contextId}): ` +
        `${total.get(key) ?? 0} turn(s) were scripted for ${key}`
      );
    },
  );
  return {
    requests: model.requests,
    call: model.call,
    requestsOf: (agent) => model.requests.filter((r) => `A${r.agentNumber}` === keyOf(agent)),
    remaining: () => Object.fromEntries([...queues].map(([k, q]) => [k, q.length])),
    assertConsumed() {
      const left = [...queues]
        .filter(([, q]) => q.length > 0)
        .map(([k, q]) => `${k}: ${q.length} of ${total.get(k)} turn(s) never requested`);
      const problems = [...unexpected, ...left];
      if (problems.length > 0) throw new Error(problems.join("\n"));
    },
  };
};
