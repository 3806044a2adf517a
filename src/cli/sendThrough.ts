// `send` on a data dir another process holds: the message goes to that process over its control socket, and the run
// is shown and reported here as if it ran here.
// Requirements: the same output, --json and exit status as a local send; Ctrl-C stops the context's tree in the
// holder; a holder that exits before the run ends is a one-line failure, not a hang; a holder that exits as the run
// ends (a `run` whose root run took the message as an intervention) is no failure: the events it had no time to
// stream are read from the log it freed, and the run is reported from there.
import type { RunOutcome } from "../projections/runOutcome.ts";
import type { ContextView } from "../projections/contexts.ts";
import { loadAudit } from "../projections/auditLoad.ts";
import type { SendResult } from "../runtime/runtime.ts";
import type { Io } from "./context.ts";
import { resolveContext, withLog } from "./context.ts";
import type { BudgetLimits, RecordedEvent } from "../events/schema.ts";
import { HolderGone, holderContexts, holderRefused, type Holder } from "./holder.ts";
import { oneLine } from "./format.ts";
import { screenWidth, wrapText } from "./screen.ts";
import { describeLocation, type LogLocation } from "./openLog.ts";
import { readAllFrom } from "./remoteLog.ts";
import { reportSession } from "./runReport.ts";
import { runSession, type SessionRuntime, type ShowMode } from "./runSession.ts";

/** The line that says which agent gets the message, and the blank line before the run is shown. */
export const printTarget = (io: Io, view: ContextView, message: string): void => {
  io.print(
    wrapText(
      `${io.paint.bold(`A${view.agentNumber} ${view.profile}`)} ${view.id} · message: ${JSON.stringify(oneLine(message, 100))}`,
      screenWidth(io.out),
      "  ",
    ),
  );
  io.print("");
};

export const sendThrough = async (
  holder: Holder,
  o: {
    v: {
      positionals: Record<string, string | undefined>;
      json?: boolean | undefined;
      events?: boolean | undefined;
      budget?: BudgetLimits | undefined;
    };
    io: Io;
    command: string;
    where: LogLocation;
    message: string;
    mode: ShowMode;
    banner: string;
  },
): Promise<number> => {
  const { io, where, message } = o;
  const contexts = holderContexts(holder);
  const view = await resolveContext(contexts, o.v.positionals["<id>"]!, where);
  const after = (await readAllFrom(holder)).at(-1)?.globalPosition ?? 0;
  if (!o.v.json) {
    io.print(
      wrapText(
        `${io.paint.bold("actorzero")} · message sent to the process that holds the data dir (it runs with that process's model)`,
        screenWidth(io.out),
        "  ",
      ),
    );
    io.print(
      wrapText(
        io.paint.dim(`log: ${describeLocation(where)}, through ${holder.socketPath}`),
        screenWidth(io.out),
        "  ",
      ),
    );
    printTarget(io, view, message);
  }
  // Every event reaches the session once, in order, whichever way it came: the holder's stream, a page read from it
  // while draining, or the log once the holder has gone.
  let shown = after;
  let deliver: ((e: RecordedEvent) => void) | null = null;
  const show = (e: RecordedEvent) => {
    if (e.globalPosition <= shown || !deliver) return;
    shown = e.globalPosition;
    deliver(e);
  };
  const rt: SessionRuntime = {
    contexts: () => contexts.contexts.list(),
    subscribe: async (listener, opts = {}) => {
      deliver = listener;
      const live = holder.follow(opts.after ?? after, show);
      return () => {
        deliver = null;
        live.close();
      };
    },
    stop: async (id) => {
      const answer = await holder.call("POST", `/v1/contexts/${id}/stop`);
      if (answer.status === 409) return null;
      if (answer.status !== 200) throw holderRefused(answer);
      return answer.body.outcome as RunOutcome;
    },
  };
  const store = {
    headPosition: async () => {
      try {
        const answer = await holder.call("GET", `/v1/events?after=${shown}&limit=10000`);
        if (answer.status === 200) {
          const page = answer.body.events as RecordedEvent[];
          for (const e of page) show(e);
          if (page.length < 10_000) return shown;
        } else if (answer.status !== 503) throw holderRefused(answer);
      } catch (e) {
        if (!(e instanceof HolderGone)) throw e;
      }
      // The holder is shutting down or gone: the rest is in the log it frees (or a new holder serves).
      return withLog(where, { create: false, projections: false }, async ({ store: log }) => {
        for await (const e of log.iterateAll(shown)) show(e);
        return log.headPosition();
      });
    },
  };
  const start = async (): Promise<SendResult> => {
    const answer = await holder.call("POST", `/v1/contexts/${view.id}/messages`, {
      text: message,
      wait: true,
      ...(o.v.budget ? { budget: o.v.budget } : {}),
    });
    if (answer.status !== 200) throw holderRefused(answer);
    return answer.body as SendResult;
  };
  const session = await runSession({ rt, store, rootId: view.id, after, mode: o.mode, io, start });
  // The holder may have exited since (its own run ended): then the dir is free and is read here.
  return withLog(where, { create: false }, async ({ store: log, projections }) => {
    const audit = await loadAudit(log, projections, view.id);
    return reportSession({ io, audit, contextId: view.id, session, flags: o.v, where, command: o.command });
  });
};
