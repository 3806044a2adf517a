// The capacity workload, shared by bench/capacity.bench.ts and its worker processes: N conversations at once,
// each a run of fresh delegations (A0 → call_subordinate → A1 answers → A0 answers) against a model that
// takes a fixed latency per call, so the ideal delegation takes 3 × latency.
import { randomUUID } from "node:crypto";
import type { EventStore } from "../../src/events/store.ts";
import type { ModelPort, ModelRequest, ModelTurn } from "../../src/models/port.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";

/** A model that answers after `latencyMs`, delegating once from A0. */
export const slowDelegatingModel = (latencyMs: number): ModelPort => ({
  call: async (req: ModelRequest): Promise<ModelTurn> => {
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
    if (req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool") {
      return {
        toolCalls: [
          {
            id: `d-${randomUUID().slice(0, 8)}`,
            name: "call_subordinate",
            arguments: JSON.stringify({ message: "look it up", reset: true }),
          },
        ],
      };
    }
    return { text: req.agentNumber === 0 ? "composed" : "found it", usage: { inputTokens: 12, outputTokens: 3 } };
  },
});

export type LoadResult = { delegations: number; wallMs: number; durationsMs: number[] };

/** Runs `conversations` loops at once, each `rounds` fresh delegations on a new root; every delegation's time. */
export const runLoad = async (
  store: EventStore,
  conversations: number,
  rounds: number,
  latencyMs: number,
): Promise<LoadResult> => {
  const rt = await createRuntime({
    store,
    model: slowDelegatingModel(latencyMs),
    limits: { passivateAfterMs: 3_600_000 },
  });
  try {
    const durationsMs: number[] = [];
    const one = async () => {
      const started = performance.now();
      const root = await rt.createContext({ name: "root" });
      const r = await rt.send(root.id, "delegate once");
      if (r.status !== "completed") throw new Error(`a delegation ended ${r.status}`);
      durationsMs.push(performance.now() - started);
    };
    const started = performance.now();
    await Promise.all(
      Array.from({ length: conversations }, async () => {
        for (let i = 0; i < rounds; i++) await one();
      }),
    );
    return { delegations: durationsMs.length, wallMs: performance.now() - started, durationsMs };
  } finally {
    await rt.close();
  }
};

export const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
