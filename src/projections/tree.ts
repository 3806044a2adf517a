// The `tree` projection: the delegation tree, one node per context with its children in creation order.
import type { ContextKind } from "../events/schema.ts";
import { defineProjection, distinctKeys, onceByPositionFresh, readsEvents } from "./projection.ts";

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

// Only ContextCreated shapes the tree: a node's own, and its children's (which name it as their parent).
const apply = readsEvents<TreeNode>({
  ContextCreated: (node, event) => {
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
  },
});

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
