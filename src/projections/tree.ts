// The `tree` projection: the delegation tree, one node per context with its children in creation order.
import type { ContextKind, RecordedEvent } from "../events/schema.ts";
import { defineProjection, distinctKeys, onceByPositionFresh, type FoldedEvent } from "./projection.ts";

export type TreeChild = { contextId: string; agentNumber: number; slot: string | null; kind: ContextKind };

/**
 * Keyed by context id, so the node of a parent holds its children. A node may exist before its own
 * ContextCreated was seen (a child named it as parent); `created` tells.
 */
export type TreeNode = {
  contextId: string;
  created: boolean;
  parentContextId: string | null;
  /** Position of the node's own ContextCreated (0 until seen): roots are listed in this order. */
  createdPosition: number;
  children: TreeChild[];
  position: number;
};

export const initTreeNode = (contextId: string): TreeNode => ({
  contextId,
  created: false,
  parentContextId: null,
  createdPosition: 0,
  children: [],
  position: 0,
});

const apply = (node: TreeNode, event: FoldedEvent): TreeNode => {
  switch (event.type) {
    case "ContextCreated": {
      const d = event.data;
      let next = node;
      if (event.streamId === node.contextId && !node.created) {
        next = { ...next, created: true, parentContextId: d.parentContextId, createdPosition: event.globalPosition };
      }
      if (d.parentContextId === node.contextId && !next.children.some((c) => c.contextId === event.streamId)) {
        const child: TreeChild = { contextId: event.streamId, agentNumber: d.agentNumber, slot: d.slot, kind: d.kind };
        next = { ...next, children: [...next.children, child] };
      }
      return next;
    }
    case "ContextRenamed":
    case "ModelOverrideSet":
    case "MessageReceived":
    case "InterventionReceived":
    case "RunStarted":
    case "ModelCalled":
    case "ModelReplied":
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
    case "HistoryCompacted":
    case "BudgetSet":
    case "BudgetExtended":
    case "BudgetReserved":
    case "BudgetSettled":
    case "BudgetExhausted":
    case "BudgetRestored":
    case "ModelCallQueued":
    case "ModelCallAdmitted":
    // A remote run's task: what it was sent and the remote task id are the contexts view's.
    case "RemoteTaskSent":
    case "RemoteTaskAccepted":
      return node;
    default: {
      const _exhaustive: never = event;
      return node;
    }
  }
};

/** Group `""` marks a created root, so `roots()` is one index scan. */
export const ROOT_GROUP = "";

export const treeProjection = defineProjection<TreeNode>({
  name: "tree",
  version: 1,
  keysOf: (event) => (event.type === "ContextCreated" ? distinctKeys(event.streamId, event.data.parentContextId) : []),
  init: initTreeNode,
  evolve: onceByPositionFresh(apply),
  columns: (_key, n) => ({
    group: n.created ? (n.parentContextId === null ? ROOT_GROUP : n.parentContextId) : null,
    order: n.createdPosition,
  }),
});

/** The root context ids among folded nodes, in creation order. */
export const rootsOf = (nodes: Iterable<TreeNode>): string[] =>
  [...nodes]
    .filter((n) => n.created && n.parentContextId === null)
    .sort((a, b) => a.createdPosition - b.createdPosition)
    .map((n) => n.contextId);
