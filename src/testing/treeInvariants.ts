// The tree invariants: agent numbers and depths follow the parent, and parent links agree with the log.
import type { RecordedEvent } from "../events/schema.ts";
import type { ContextView } from "../projections/contexts.ts";
import { violation as v, type Violation } from "./invariants.ts";

/**
 * A root is A0 at depth 0 and its own root; a child is its parent's number + 1 at depth + 1, records
 * the parent's number, and shares its root.
 */
export const checkNumbersAndDepths = (views: readonly ContextView[]): Violation[] => {
  const out: Violation[] = [];
  const byId = new Map(views.map((c) => [c.id, c]));
  for (const c of views) {
    if (c.parentContextId === null) {
      if (c.agentNumber !== 0 || c.depth !== 0 || c.kind !== "root" || c.rootContextId !== c.id) {
        out.push(
          v(
            "numbers-and-depths",
            c.id,
            `a root must be A0 at depth 0, its own root; it is A${c.agentNumber} at depth ${c.depth}, kind ${c.kind}, root ${c.rootContextId}`,
          ),
        );
      }
      continue;
    }
    const p = byId.get(c.parentContextId);
    if (!p) {
      out.push(v("numbers-and-depths", c.id, `its parent ${c.parentContextId} is not in the tree`));
      continue;
    }
    const problems: string[] = [];
    if (c.agentNumber !== p.agentNumber + 1) problems.push(`number A${c.agentNumber} under A${p.agentNumber}`);
    if (c.depth !== p.depth + 1) problems.push(`depth ${c.depth} under depth ${p.depth}`);
    if (c.parentAgentNumber !== p.agentNumber)
      problems.push(`records parent number ${c.parentAgentNumber}, the parent is A${p.agentNumber}`);
    if (c.rootContextId !== p.rootContextId)
      problems.push(`root ${c.rootContextId}, the parent's is ${p.rootContextId}`);
    if (c.kind !== "subordinate" && c.kind !== "remote") problems.push(`kind ${c.kind}`);
    if (problems.length > 0) out.push(v("numbers-and-depths", c.id, problems.join("; ")));
  }
  return out;
};

/** The view's parent is the one ContextCreated recorded, and the tree lists each child under that parent only. */
export const checkParentLinks = (
  views: readonly ContextView[],
  streams: ReadonlyMap<string, readonly RecordedEvent[]>,
  childrenOf: ReadonlyMap<string, readonly string[]>,
): Violation[] => {
  const out: Violation[] = [];
  for (const c of views) {
    const created = streams.get(c.id)?.[0];
    if (created?.type === "ContextCreated" && created.data.parentContextId !== c.parentContextId) {
      out.push(
        v(
          "parent-links",
          c.id,
          `the view's parent is ${c.parentContextId}, ContextCreated says ${created.data.parentContextId}`,
        ),
      );
    }
    const listed = [...childrenOf].filter(([, kids]) => kids.includes(c.id)).map(([p]) => p);
    const want = c.parentContextId === null ? [] : [c.parentContextId];
    if (JSON.stringify(listed) !== JSON.stringify(want))
      out.push(
        v("parent-links", c.id, `listed as a child of [${listed.join(", ")}], its parent is ${c.parentContextId}`),
      );
  }
  return out;
};
