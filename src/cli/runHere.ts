// `run` and `send` in this process: a runtime on the log it opened, the control socket while it runs, one session
// shown live, then the audit the runtime answers.
// Requirements: the control socket, the runtime and the store are closed on every path, in that order; the report
// reads the audit from the runtime that ran the session (its projections caught up), not from a second engine.
import type { EventStore } from "../events/store.ts";
import type { Runtime, SendResult } from "../runtime/runtime.ts";
import type { CliConfig } from "./config.ts";
import { listenForControl } from "./controlListener.ts";
import type { Io } from "./context.ts";
import type { ModelChoice } from "./modelChoice.ts";
import { describeLocation, type LogLocation } from "./openLog.ts";
import { reportSession } from "./runReport.ts";
import { runSession, type ShowMode } from "./runSession.ts";
import { runtimeFor } from "./runtimeFor.ts";
import { screenWidth, wrapText } from "./screen.ts";

/** The first lines of `run` and `send`: which model runs, and where the log is. */
export const printBanner = (io: Io, choice: ModelChoice, where: LogLocation): void => {
  io.print(
    wrapText(
      `${io.paint.bold("actorzero")} · ${choice.offline ? io.paint.yellow(choice.banner) : choice.banner}`,
      screenWidth(io.out),
      "  ",
    ),
  );
  io.print(wrapText(io.paint.dim(`log: ${describeLocation(where)}`), screenWidth(io.out), "  "));
};

/** What a command starts once its runtime is up: the root whose tree is shown, from where, and the message's run. */
export type Begun = { rootId: string; after: number; start: () => Promise<SendResult> };

export const runHere = async (
  store: EventStore,
  o: {
    config: CliConfig;
    choice: ModelChoice;
    recovery: "resume" | "interrupt";
    where: LogLocation;
    io: Io;
    mode: ShowMode;
    flags: { json?: boolean | undefined; events?: boolean | undefined };
    command: string;
  },
  begin: (rt: Runtime) => Promise<Begun>,
): Promise<number> => {
  try {
    const rt = await runtimeFor(store, o.config, o.choice, o.recovery);
    // While this process holds the data dir, other commands (stop, pause, contexts, …) reach it on the control socket.
    const control = await listenForControl(rt, o.where, o.io);
    try {
      const { rootId, after, start } = await begin(rt);
      const session = await runSession({ rt, store, rootId, after, mode: o.mode, io: o.io, start });
      const audit = await rt.audit(rootId);
      return await reportSession({ ...o, audit, contextId: rootId, session });
    } finally {
      await control.close();
      await rt.close();
    }
  } finally {
    await store.close();
  }
};
