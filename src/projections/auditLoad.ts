// Reads what an audit needs from the log: the streams of a context and of everything below it, then builds the report.
//
// Requirements:
// - The one loader of `actorzero audit --json` and of the HTTP API's audit route, so both show the same facts.
// - `until` cuts every stream at that global position: the audit as it was then (contexts created later are left out).
// - The report carries the budget of the audited context's tree (its root's budget stream and the replies that
//   settle its reservations, cut at `until` too).
import type { LogReads } from "../events/store.ts";
import type { RecordedEvent } from "../events/schema.ts";
import type { ProjectionQueries } from "./api.ts";
import { buildAudit, type AuditReport } from "./auditReport.ts";
import { initBudget, readBudget, treeBudgetOf } from "./budget.ts";

/** Every context under `id` (itself included), depth first in creation order. */
export const subtreeIds = async (projections: Pick<ProjectionQueries, "tree">, id: string): Promise<string[]> => {
  const out: string[] = [];
  const walk = async (at: string) => {
    out.push(at);
    for (const child of await projections.tree.children(at)) await walk(child.contextId);
  };
  await walk(id);
  return out;
};

export const loadAudit = async (
  store: LogReads,
  projections: ProjectionQueries,
  rootId: string,
  options: { until?: number } = {},
): Promise<AuditReport> => {
  await projections.catchUp();
  const until = options.until ?? Number.POSITIVE_INFINITY;
  const streams = new Map<string, RecordedEvent[]>();
  for (const id of await subtreeIds(projections, rootId)) {
    streams.set(
      id,
      (await store.readStream(id)).filter((e) => e.globalPosition <= until),
    );
  }
  const treeRoot = (await projections.contexts.get(rootId))?.rootContextId ?? rootId;
  const budget = await readBudget(store, treeRoot, initBudget(), until);
  return { ...buildAudit(rootId, streams), budget: budget.limits === null ? null : treeBudgetOf(treeRoot, budget) };
};
