// `actorzero extend-budget <id> <more>`: adds to the budget of a context's tree, so the runs parked on it go on.
// Requirements: `<more>` in the syntax of `run --budget` (a bad key or value is one usage line naming it, nothing
// written); any context of the tree names the tree. On a data dir that run, send or serve holds, the extension goes
// through that process (its control socket), where the parked runs go on; otherwise it is recorded here, and the
// tree's runs go on here until each has ended, parked again, or waits on a parked subordinate (those are recorded
// as interrupted when this process closes, as every run in flight at a close is).
import { z } from "zod";
import type { EventStore } from "../../events/store.ts";
import type { BudgetLimits } from "../../events/schema.ts";
import type { BudgetReport } from "../../runtime/budgets.ts";
import { isActive, isParked, isStopping } from "../../actors/contextQueries.ts";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { positionals } from "../flags.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { holderContexts, holderRefused, openLogOrHolder, type Holder } from "../holder.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate, type LogLocation } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";
import { BUDGET_SYNTAX, budgetArg, budgetLine, parseBudget } from "../budgetText.ts";

export const extendBudgetSpec = defineCommand({
  name: "extend-budget",
  summary: "Add to the budget of a context's tree: runs parked on it (out of budget) go on.",
  usage: ["extend-budget <id> <more> [--json]     e.g. extend-budget 1a2b3c4d totalTokens=20000,costUsd=0.5"],
  args: positionals("extend-budget", [{ name: "<id>", id: true }, { name: "<more>" }]).transform((p, ctx) => {
    const more = parseBudget("<more>", p["<more>"]!);
    if (typeof more === "string") {
      ctx.addIssue({ code: "custom", message: more });
      return z.NEVER;
    }
    return { id: p["<id>"]!, more };
  }),
  flags: { ...STORE_FLAGS, ...JSON_FLAG },
  details: `<id> is any context of the tree (or a unique prefix of one); the budget is its root's. <more> is ${BUDGET_SYNTAX}:
each value is added to that limit (a key the tree has no limit for gets one). Keys: inputTokens, outputTokens,
totalTokens, costUsd, modelCalls, toolCalls, wallClockMs.
Every run of the tree parked on its budget then reserves again: it goes on, or parks again if the extension was not enough.
On a data dir that actorzero run, send or serve holds, the extension goes to that process (its control socket).
Otherwise the tree goes on here (runs a killed process left are resumed, as run and send do), until each of its
runs has ended, parked again, or waits on a parked subordinate.
--json: the tree's budget afterwards, { rootContextId, limits, spent, reserved, parked }.`,
});
type Values = ValuesOf<typeof extendBudgetSpec>;

export const extendBudgetCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "extend-budget");
  const { id, more } = v.positionals;
  const opened = await openLogOrHolder(where, { create: false });
  const report = opened.holder
    ? await through(opened.holder, id, more, where)
    : await here(opened.store, id, more, io, where);
  if (v.json) {
    io.print(JSON.stringify(report));
    return EXIT.ok;
  }
  io.print(`budget of tree ${report.rootContextId.slice(0, 8)} extended by ${budgetArg(more)}`);
  io.print(budgetLine(report, io.paint));
  io.print(
    report.parked.length === 0
      ? "no run of the tree is parked on its budget now"
      : io.paint.yellow(
          `still parked (the extension was not enough): ${report.parked.map((p) => `${p.contextId.slice(0, 8)} (${p.limit})`).join(", ")}`,
        ),
  );
  return EXIT.ok;
};

const through = async (holder: Holder, arg: string, more: BudgetLimits, where: LogLocation): Promise<BudgetReport> => {
  const view = await resolveContext(holderContexts(holder), arg, where);
  const answer = await holder.call("POST", `/v1/contexts/${view.id}/budget/extend`, more);
  if (answer.status !== 200) throw holderRefused(answer);
  return answer.body as BudgetReport;
};

type Rt = Awaited<ReturnType<typeof runtimeFor>>;

/**
 * No run of the tree moves here any more: each has ended, is parked (on its budget or an approval), or waits on a
 * subordinate that is parked (it would wait for a person).
 */
const treeQuiet = async (rt: Rt, root: string): Promise<boolean> => {
  const views = await rt.contexts({ rootContextId: root });
  const parentOf = new Map(views.map((v) => [v.id, v.parentContextId]));
  const snapshot = (id: string) => rt.actor(id)?.getSnapshot();
  const blocked = new Set<string>();
  for (const v of views) {
    const s = snapshot(v.id);
    if (!s || !isParked(s)) continue;
    for (let at = parentOf.get(v.id) ?? null; at !== null && !blocked.has(at); at = parentOf.get(at) ?? null)
      blocked.add(at);
  }
  return views.every((v) => {
    const s = snapshot(v.id);
    return !s || blocked.has(v.id) || !(isActive(s) || isStopping(s));
  });
};

const here = async (
  store: EventStore,
  arg: string,
  more: BudgetLimits,
  io: Io,
  where: LogLocation,
): Promise<BudgetReport> => {
  try {
    const { openProjections } = await import("../../projections/engine.ts");
    const view = await resolveContext(await openProjections(store), arg, where);
    const config = loadConfig(io.cwd);
    // Resumed as run, send and serve resume: the point of an extension is that the tree goes on.
    const rt = await runtimeFor(store, config, await chooseModel({}, config, io.env), "resume");
    try {
      const root = view.rootContextId;
      await rt.extendBudget(root, more);
      // The runs it restored (and what opening the log resumed) go on in this process: wait until the tree is quiet.
      await new Promise<void>((resolve, reject) => {
        let unsubscribe: (() => void) | null = null;
        let done = false;
        const check = () =>
          void treeQuiet(rt, root).then((quiet) => {
            if (!quiet || done) return;
            done = true;
            unsubscribe?.();
            resolve();
          }, reject);
        void rt.subscribe(check).then((u) => {
          unsubscribe = u;
          if (done) u();
          check();
        }, reject);
      });
      return await rt.budget(root);
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
};
