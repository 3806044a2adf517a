// The `usage` projection: tokens and model calls per context, rolled up per delegation root.
import type { RecordedEvent } from "../events/schema.ts";
import { defineProjection, onceByPositionFresh, type FoldedEvent } from "./projection.ts";

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

export type UsageRollup = { rootContextId: string; inputTokens: number; outputTokens: number; modelCalls: number; contexts: number };

export const initUsage = (contextId: string): UsageView => ({
  contextId,
  rootContextId: null,
  inputTokens: 0,
  outputTokens: 0,
  modelCalls: 0,
  position: 0,
});

const apply = (u: UsageView, event: FoldedEvent): UsageView => {
  switch (event.type) {
    case "ContextCreated":
      return { ...u, rootContextId: event.data.rootContextId };
    case "ModelReplied": {
      const usage = event.data.usage;
      return {
        ...u,
        modelCalls: u.modelCalls + 1,
        inputTokens: u.inputTokens + (usage?.inputTokens ?? 0),
        outputTokens: u.outputTokens + (usage?.outputTokens ?? 0),
      };
    }
    // The summary's model calls are the context's own calls (purpose `compaction`).
    case "HistoryCompacted": {
      const usage = event.data.usage;
      return {
        ...u,
        modelCalls: u.modelCalls + event.data.calls,
        inputTokens: u.inputTokens + (usage?.inputTokens ?? 0),
        outputTokens: u.outputTokens + (usage?.outputTokens ?? 0),
      };
    }
    case "ContextRenamed":
    case "ModelOverrideSet":
    case "MessageReceived":
    case "InterventionReceived":
    case "RunStarted":
    case "ModelCalled":
    case "ModelCallFailed":
    case "ModelWarned":
    case "ToolCalled":
    case "ToolReturned":
    case "ToolFailed":
    case "SubordinateCalled":
    case "SubordinateReturned":
    case "RunCompleted":
    case "RunStopped":
    case "RunFailed":
    case "RunInterrupted":
    case "ContextPaused":
    case "ContextResumed":
    case "ParallelJobStarted":
    case "ParallelJobFinished":
    case "ApprovalRequested":
    case "ApprovalGranted":
    case "ApprovalDenied":
    case "BudgetSet":
    case "BudgetExtended":
    case "BudgetReserved":
    case "BudgetSettled":
    case "BudgetExhausted":
    case "BudgetRestored":
    // A queued call is billed by its reply, like any other.
    case "ModelCallQueued":
    case "ModelCallAdmitted":
    // A remote run's task: what it was sent and the remote task id are the contexts view's.
    case "RemoteTaskSent":
    case "RemoteTaskAccepted":
      return u;
    default: {
      const _exhaustive: never = event;
      return u;
    }
  }
};

/** Key: the context id. Grouped by root so a rollup is one indexed aggregate. */
export const usageProjection = defineProjection<UsageView>({
  name: "usage",
  version: 2,
  keysOf: (event) => (event.type === "ContextCreated" || event.type === "ModelReplied" || event.type === "HistoryCompacted" ? [event.streamId] : []),
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
