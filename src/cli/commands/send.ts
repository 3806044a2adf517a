// `actorzero send <id> "<message>"`: a message to a context (a new run, or an intervention if it runs), shown live.
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { usageError } from "../errors.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { chooseModel } from "../modelChoice.ts";
import { openLogOrHolder } from "../holder.ts";
import { locate } from "../openLog.ts";
import { printTarget, sendThrough } from "../sendThrough.ts";
import { printBanner, runHere } from "../runHere.ts";
import type { ShowMode } from "../runSession.ts";
import { BUDGET_SYNTAX, budgetFlag } from "../budgetText.ts";
import { MODEL_FLAGS } from "../modelFlags.ts";

export const sendSpec = defineCommand({
  name: "send",
  summary:
    "Send a message to a context: it runs again with its history (or takes it as an intervention while running).",
  usage: ['send <id> "<message>" [--budget <limits>] [--model <m>] [--offline] [--events] [--json]'],
  args: [{ name: "<id>", id: true }, { name: "<message>" }],
  flags: {
    ...STORE_FLAGS,
    budget: {
      type: "string",
      value: "<limits>",
      description: `what the tree may spend on this message, added to what it has spent and holds: ${BUDGET_SYNTAX}; keys as for run --budget`,
      schema: budgetFlag("--budget").optional(),
    },
    ...MODEL_FLAGS,
    ...JSON_FLAG,
  },
  details: `Shown like run: live on a terminal, a line per event otherwise; Ctrl-C stops the context's tree. Exit status as for run.
On a data dir that actorzero run, send or serve holds, the message goes to that process (its control socket) and
runs there, with that process's model; this command shows the run and reports it the same way.`,
});
type Values = ValuesOf<typeof sendSpec>;

export const sendCommand = async (v: Values, io: Io, command: string): Promise<number> => {
  const where = locate(v, "send");
  const message = v.positionals["<message>"]!;
  if (message.trim() === "") throw usageError("the message is empty", "send");
  const config = loadConfig(io.cwd);
  const choice = await chooseModel(v, config, io.env);
  const mode: ShowMode = v.json ? (v.events ? "json-lines" : "quiet") : v.events || !io.out.isTTY ? "lines" : "live";
  const opened = await openLogOrHolder(where, { create: false });
  if (opened.holder) return sendThrough(opened.holder, { v, io, command, where, message, mode, banner: choice.banner });
  const o = { config, choice, recovery: v.recovery ?? "resume", where, io, mode, flags: v, command } as const;
  return runHere(opened.store, o, async (rt) => {
    const contexts = { get: (id: string) => rt.context(id), list: () => rt.contexts() };
    const view = await resolveContext({ contexts }, v.positionals["<id>"]!, where);
    const after = await opened.store.headPosition();
    if (!v.json) {
      printBanner(io, choice, where);
      printTarget(io, view, message);
    }
    return {
      rootId: view.id,
      after,
      start: () => rt.send(view.id, message, v.budget ? { budget: v.budget } : undefined),
    };
  });
};
