// Shared by the budget tests: an 8 × 8 fan-out scripted model and the tree's quiet state.
import { type ModelRequest, type ModelTurn, type Runtime } from "../../src/index.ts";
import { tokenCounterFor } from "../../src/models/tokenCount.ts";
import { call, repliesSoFar } from "../delegation/support.ts";

export const FAN = 8;
export const LEAF_OUTPUT = 20;

const fanOut = (req: ModelRequest): ModelTurn =>
  call("parallel", {
    tool_calls: Array.from({ length: FAN }, (_, i) => ({
      name: "call_subordinate",
      arguments: { message: `part ${i + 1} of A${req.agentNumber}` },
    })),
  });

/**
 * A0 and each A1 fan out to 8 subordinates in parallel, then answer; each A2 answers at once. Every reply
 * reports as its usage the request's counted input tokens (what a provider would bill) and `LEAF_OUTPUT`.
 */
export const fanOutModel = async (req: ModelRequest): Promise<ModelTurn> => {
  const inputTokens = (await tokenCounterFor(req.model)).request({ messages: req.messages, tools: [...req.tools] });
  const usage = { inputTokens, outputTokens: LEAF_OUTPUT };
  if (req.agentNumber < 2 && repliesSoFar(req) === 0) return { ...fanOut(req), usage };
  return { text: req.agentNumber < 2 ? "all parts done" : "leaf done", usage };
};

/**
 * Whether the tree under `root` has come to rest while its run is open: no reservation is held, and every running
 * context is parked on the budget or waits on a running child.
 */
export const atRest = async (rt: Runtime, root: string): Promise<boolean> => {
  const budget = await rt.budget(root);
  if (budget.reserved.modelCalls > 0 || budget.parked.length === 0) return false;
  const running = await rt.contexts({ rootContextId: root, status: "running" });
  const parked = new Set(budget.parked.map((p) => p.contextId));
  const parents = new Set(running.map((c) => c.parentContextId));
  return running.every((c) => parked.has(c.id) || parents.has(c.id));
};
