// `actorzero tree [id]`: the delegation trees of the log (or the one under a context), as a tree table.
import type { ProjectionQueries } from "../../projections/engine.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { count, duration } from "../format.ts";
import { locate } from "../openLog.ts";
import type { LogReads } from "../../events/store.ts";
import { runElapsedMs, runTruth, type RunTruth } from "../deadRuns.ts";
import { shortTask } from "../rootTask.ts";
import { paintStatus, statusNote } from "../status.ts";
import { treeTable, type TreeNode } from "../treeTable.ts";
import type { ContextRow } from "./contexts.ts";
import { readBudget, type TreeBudget, treeBudgetOf } from "../../projections/budget.ts";
import { budgetLine } from "../budgetText.ts";

export const treeSpec = defineCommand({
  name: "tree",
  summary: "Show the delegation trees (A0 → A1 → A2 …) with each context's status, time and tokens.",
  usage: ["tree [id] [--json]"],
  args: [{ name: "[id]", id: true, optional: true }],
  flags: { ...STORE_FLAGS, ...JSON_FLAG },
  details:
    "Each tree opens with its root's task (the first message it received, shortened). With an id (or a unique prefix of one): the tree under that context. Each tree shows its budget (what the whole tree may spend) and what it spent against each limit. --json prints nested { ...context row, elapsedMs, children: [...] }, with budget: { rootContextId, limits, spent, reserved } (or null) on each top row. A run whose process is gone shows as interrupted (nothing is written), its time ending at its last event.",
});
type Values = ValuesOf<typeof treeSpec>;

/**
 * `elapsedMs`: the last run's time, ended at its last event when it was cut short (null while it runs).
 * `budget`: on each tree's top row, the budget of its whole tree and what it spent (null: none).
 */
export type TreeJson = ContextRow & { elapsedMs: number | null; children: TreeJson[]; budget?: TreeBudget | null };

const budgetOf = async (store: LogReads, rootId: string): Promise<TreeBudget | null> => {
  const s = await readBudget(store, rootId);
  return s.limits === null ? null : treeBudgetOf(rootId, s);
};

const build = async (
  store: LogReads,
  projections: ProjectionQueries,
  truth: RunTruth,
  id: string,
): Promise<TreeJson | null> => {
  const view = await projections.contexts.get(id);
  if (!view) return null;
  const children: TreeJson[] = [];
  for (const c of await projections.tree.children(id)) {
    const node = await build(store, projections, truth, c.contextId);
    if (node) children.push(node);
  }
  const stream = await store.readStream(id);
  const task =
    view.kind === "root"
      ? ((stream.find((e) => e.type === "MessageReceived")?.data as { text?: string } | undefined)?.text ?? null)
      : null;
  const shown = truth.shown(view);
  const elapsedMs = shown === "running" ? null : runElapsedMs(view, stream);
  return { ...view, shownStatus: shown, usage: await projections.usage.of(id), task, elapsedMs, children };
};

const toNode = (t: TreeJson): TreeNode<TreeJson> => ({ value: t, children: t.children.map(toNode) });

export const treeCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "tree");
  return withLog(where, { create: false, readOnly: true }, async ({ store, projections, holder }) => {
    const truth = await runTruth(where, holder ? null : store.sql);
    const ids = v.positionals["[id]"]
      ? [(await resolveContext(projections, v.positionals["[id]"], where)).id]
      : await projections.tree.roots();
    const built = (await Promise.all(ids.map((id) => build(store, projections, truth, id)))).filter(
      (t): t is TreeJson => t !== null,
    );
    const trees = await Promise.all(built.map(async (t) => ({ ...t, budget: await budgetOf(store, t.rootContextId) })));
    if (v.json) {
      io.print(JSON.stringify(trees));
      return EXIT.ok;
    }
    if (trees.length === 0) {
      io.print(`no contexts yet: start one with actorzero run "<task>"`);
      return EXIT.ok;
    }
    const p = io.paint;
    for (const [i, t] of trees.entries()) {
      if (i > 0) io.print("");
      io.print(
        `${p.bold(`A${t.agentNumber} ${t.profile}`)} ${p.dim(t.id.slice(0, 8))} · task: ${t.kind === "root" ? JSON.stringify(shortTask(t.task, 100)) : p.dim(`(a subordinate of ${t.parentContextId?.slice(0, 8)})`)}`,
      );
      io.print(budgetLine(t.budget, p));
      io.print(
        treeTable(
          [toNode(t)],
          ["AGENT", "PROFILE", "NAME", "STATUS", "LAST RUN", "TOKENS", "CONTEXT"],
          (t) => {
            return [
              p.bold(`A${t.agentNumber}`),
              // A remote child: the agent its task went to, and that task's id (the remote side's run).
              t.remote
                ? `${t.profile} ${p.dim(`@ ${t.remote.url}${t.remote.taskId ? ` task ${t.remote.taskId.slice(0, 8)}` : ""}`)}`
                : t.profile,
              t.name.length > 28 ? `${t.name.slice(0, 27)}…` : t.name,
              paintStatus(t.shownStatus, p) + statusNote(t, p),
              duration(t.elapsedMs),
              count((t.usage?.inputTokens ?? 0) + (t.usage?.outputTokens ?? 0)),
              p.dim(t.id.slice(0, 8)),
            ];
          },
          p,
        ),
      );
    }
    return EXIT.ok;
  });
};
