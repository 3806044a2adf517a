// `actorzero tree [id]`: the delegation trees of the log (or the one under a context), as a tree table.
import { z } from "zod";
import type { Projections } from "../../projections/engine.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { JSON_OPTION, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { count, duration } from "../format.ts";
import { locate } from "../openLog.ts";
import type { EventStore } from "../../events/store.ts";
import { firstMessage, shortTask } from "../rootTask.ts";
import { paintStatus, shownStatus } from "../status.ts";
import { treeTable, type TreeNode } from "../treeTable.ts";
import type { ContextRow } from "./contexts.ts";

const Values = StoreFlags.extend({
  positionals: positionals("tree", [{ name: "[id]", id: true, optional: true }]),
  json: z.boolean().optional(),
});
type Values = z.infer<typeof Values>;

export const treeSpec: CommandSpec<Values> = {
  name: "tree",
  summary: "Show the delegation trees (A0 → A1 → A2 …) with each context's status, time and tokens.",
  usage: ["tree [id] [--json]"],
  options: { ...STORE_OPTIONS, ...JSON_OPTION },
  details: "Each tree opens with its root's task (the first message it received, shortened). With an id (or a unique prefix of one): the tree under that context. --json prints nested { ...context row, children: [...] }.",
  schema: Values as z.ZodType<Values>,
};

export type TreeJson = ContextRow & { children: TreeJson[] };

const build = async (store: EventStore, projections: Projections, id: string): Promise<TreeJson | null> => {
  const view = await projections.contexts.get(id);
  if (!view) return null;
  const children: TreeJson[] = [];
  for (const c of await projections.tree.children(id)) {
    const node = await build(store, projections, c.contextId);
    if (node) children.push(node);
  }
  const task = view.kind === "root" ? await firstMessage(store, id) : null;
  return { ...view, shownStatus: shownStatus(view), usage: await projections.usage.of(id), task, children };
};

const toNode = (t: TreeJson): TreeNode<TreeJson> => ({ value: t, children: t.children.map(toNode) });

export const treeCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "tree");
  return withLog(where, { create: false }, async ({ store, projections }) => {
    const ids = v.positionals["[id]"] ? [(await resolveContext(projections, v.positionals["[id]"], where)).id] : await projections.tree.roots();
    const trees = (await Promise.all(ids.map((id) => build(store, projections, id)))).filter((t): t is TreeJson => t !== null);
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
      io.print(`${p.bold(`A${t.agentNumber} ${t.profile}`)} ${p.dim(t.id.slice(0, 8))} · task: ${t.kind === "root" ? JSON.stringify(shortTask(t.task, 100)) : p.dim(`(a subordinate of ${t.parentContextId?.slice(0, 8)})`)}`);
      io.print(
      treeTable(
        [toNode(t)],
        ["AGENT", "PROFILE", "NAME", "STATUS", "LAST RUN", "TOKENS", "CONTEXT"],
        (t) => {
          const run = t.lastRun;
          const ms = run?.startedAt && run.endedAt ? Date.parse(run.endedAt) - Date.parse(run.startedAt) : null;
          return [
            p.bold(`A${t.agentNumber}`),
            t.profile,
            t.name.length > 28 ? `${t.name.slice(0, 27)}…` : t.name,
            paintStatus(t.shownStatus, p) + (t.paused ? p.yellow(" (paused)") : ""),
            duration(ms),
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
