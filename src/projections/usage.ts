// The `usage` projection: tokens and model calls per context, rolled up per delegation root.
import type { Usage } from "../events/schema.ts";
import { defineProjection, onceByPositionFresh, readsEvents } from "./projection.ts";

export type UsageView = {
  contextId: string;
  /** Null until the context's ContextCreated is seen. */
  rootContextId: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Model replies received (a reply without usage still counts as a call). */
  modelCalls: number;
  position: number;
};

export type UsageRollup = {
  rootContextId: string;
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  contexts: number;
};

export const initUsage = (contextId: string): UsageView => ({
  contextId,
  rootContextId: null,
  inputTokens: 0,
  outputTokens: 0,
  modelCalls: 0,
  position: 0,
});

/** Tokens and model calls, as a context, a run or a tree counts them. */
export type UsageCount = { inputTokens: number; outputTokens: number; modelCalls: number };

/**
 * `count` with `calls` model calls and their tokens added: a reply is one call, a compaction's summary as many
 * as it made (purpose `compaction`). A reply without usage still counts as a call.
 */
export const addUsage = <C extends UsageCount>(count: C, calls: number, usage: Usage | null | undefined): C => ({
  ...count,
  modelCalls: count.modelCalls + calls,
  inputTokens: count.inputTokens + (usage?.inputTokens ?? 0),
  outputTokens: count.outputTokens + (usage?.outputTokens ?? 0),
});

// A queued call (ModelCallQueued) is billed by its reply, like any other.
const apply = readsEvents<UsageView>({
  ContextCreated: (u, e) => ({ ...u, rootContextId: e.data.rootContextId }),
  ModelReplied: (u, e) => addUsage(u, 1, e.data.usage),
  HistoryCompacted: (u, e) => addUsage(u, e.data.calls, e.data.usage),
});

/** Key: the context id. Grouped by root so a rollup is one indexed aggregate. */
export const usageProjection = defineProjection<UsageView>({
  name: "usage",
  version: 2,
  keysOf: (event) => (apply.types.has(event.type) ? [event.streamId] : []),
  init: initUsage,
  evolve: onceByPositionFresh(apply),
  columns: (_key, u) => ({ group: u.rootContextId, order: 0 }),
});

/** Sums the usage of every context under `rootContextId`, each context once. */
export const rollupOf = (rootContextId: string, views: Iterable<UsageView>): UsageRollup => {
  const r: UsageRollup = { rootContextId, inputTokens: 0, outputTokens: 0, modelCalls: 0, contexts: 0 };
  for (const u of views) {
    if (u.rootContextId !== rootContextId) continue;
    r.inputTokens += u.inputTokens;
    r.outputTokens += u.outputTokens;
    r.modelCalls += u.modelCalls;
    r.contexts += 1;
  }
  return r;
};
