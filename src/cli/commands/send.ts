// `actorzero send <id> "<message>"`: a message to a context (a new run, or an intervention if it runs), shown live.
import { screenWidth, wrapText } from "../screen.ts";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { usageError } from "../errors.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { oneLine } from "../format.ts";
import { chooseModel } from "../modelChoice.ts";
import { openLogOrHolder } from "../holder.ts";
import { describeLocation, locate } from "../openLog.ts";
import { sendThrough } from "../sendThrough.ts";
import { reportSession } from "../runReport.ts";
import { runSession, type ShowMode } from "../runSession.ts";
import { listenForControl } from "../controlListener.ts";
import { runtimeFor } from "../runtimeFor.ts";
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
  const store = opened.store;
  try {
    const rt = await runtimeFor(store, config, choice, v.recovery ?? "resume");
    // While this process holds the data dir, other commands (stop, pause, contexts, …) reach it on the control socket.
    const control = await listenForControl(rt, where, io);
    try {
      const view = await resolveContext(rt.projections, v.positionals["<id>"]!, where);
      const after = await store.headPosition();
      if (!v.json) {
        io.print(
          wrapText(
            `${io.paint.bold("actorzero")} · ${choice.offline ? io.paint.yellow(choice.banner) : choice.banner}`,
            screenWidth(io.out),
            "  ",
          ),
        );
        io.print(wrapText(io.paint.dim(`log: ${describeLocation(where)}`), screenWidth(io.out), "  "));
        io.print(
          wrapText(
            `${io.paint.bold(`A${view.agentNumber} ${view.profile}`)} ${view.id} · message: ${JSON.stringify(oneLine(message, 100))}`,
            screenWidth(io.out),
            "  ",
          ),
        );
        io.print("");
      }
      const session = await runSession({
        rt,
        store,
        rootId: view.id,
        after,
        mode,
        io,
        start: () => rt.send(view.id, message, v.budget ? { budget: v.budget } : undefined),
      });
      return await reportSession({
        io,
        store,
        projections: rt.projections,
        contextId: view.id,
        session,
        flags: v,
        where,
        command,
      });
    } finally {
      await control.close();
      await rt.close();
    }
  } finally {
    await store.close();
  }
};
