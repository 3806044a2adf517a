// `actorzero pause <id>` and `actorzero resume <id>`: a context waits at its next checkpoint, then goes on.
// Requirements: recorded in the log (ContextPaused / ContextResumed) by the process that drives the context: on a data
// dir actorzero run, send or serve holds, through that process (its control socket); otherwise here. Idempotent.
import { z } from "zod";
import type { EventStore } from "../../events/store.ts";
import type { ContextView } from "../../projections/contexts.ts";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { JSON_OPTION, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { holderContexts, holderRefused, openLogOrHolder, type Holder } from "../holder.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate, type LogLocation } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";
import { shownStatus } from "../status.ts";

type Action = "pause" | "resume";

const valuesOf = (action: Action) =>
  StoreFlags.extend({
    positionals: positionals(action, [{ name: "<id>", id: true }]),
    json: z.boolean().optional(),
  });
type Values = z.infer<ReturnType<typeof valuesOf>>;

const specOf = (action: Action, summary: string, details: string): CommandSpec<Values> => ({
  name: action,
  summary,
  usage: [`${action} <id> [--json]`],
  options: { ...STORE_OPTIONS, ...JSON_OPTION },
  details: `${details}
On a data dir that actorzero run, send or serve holds, this goes to that process (its control socket).
--json: { contextId, paused, status }.`,
  schema: valuesOf(action) as z.ZodType<Values>,
});

export const pauseSpec = specOf(
  "pause",
  "Pause a context: its run waits at the next checkpoint (before its next model call) until resume, a message, or stop.",
  "Recorded as ContextPaused. Pausing a paused context changes nothing.",
);
export const resumeSpec = specOf(
  "resume",
  "Resume a paused context: its run goes on from where it waited.",
  "Recorded as ContextResumed. Resuming a context that is not paused changes nothing.",
);

const act =
  (action: Action) =>
  async (v: Values, io: Io): Promise<number> => {
    const where = locate(v, action);
    const opened = await openLogOrHolder(where, { create: false });
    const { before, view } = opened.holder
      ? await through(opened.holder, action, v.positionals["<id>"]!, where)
      : await here(opened.store, action, v, io, where);
    const status = shownStatus(view);
    if (v.json) {
      io.print(JSON.stringify({ contextId: view.id, paused: view.paused, status }));
      return EXIT.ok;
    }
    const who = `A${view.agentNumber} ${view.profile} ${view.id.slice(0, 8)}`;
    // Say what this command did: a change, or that there was nothing to change.
    const changed = before.paused !== view.paused;
    if (view.paused) {
      const state = changed ? `is paused (${status})` : `was already paused (${status}): nothing changed`;
      io.print(
        `${who} ${state}: ${status === "running" ? `its run waits at its next checkpoint until actorzero resume ${view.id.slice(0, 8)}, a message, or stop` : "nothing runs now; a message starts a run as usual"}`,
      );
    } else if (changed) io.print(`${who} resumed (${status})${status === "running" ? ": its run goes on" : ""}`);
    else io.print(`${who} was not paused (${status}): nothing changed`);
    return EXIT.ok;
  };

export const pauseCommand = act("pause");
export const resumeCommand = act("resume");

type Change = { before: ContextView; view: ContextView };

const here = async (store: EventStore, action: Action, v: Values, io: Io, where: LogLocation): Promise<Change> => {
  try {
    const { openProjections } = await import("../../projections/engine.ts");
    const view = await resolveContext(await openProjections(store), v.positionals["<id>"]!, where);
    const rt = await runtimeFor(store, loadConfig(io.cwd), await chooseModel({ offline: true }, {}, io.env));
    try {
      const before = (await rt.context(view.id)) ?? view;
      await rt[action](view.id);
      return { before, view: (await rt.context(view.id))! };
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
};

const through = async (holder: Holder, action: Action, arg: string, where: LogLocation): Promise<Change> => {
  const before = await resolveContext(holderContexts(holder), arg, where);
  const answer = await holder.call("POST", `/v1/contexts/${before.id}/${action}`);
  if (answer.status !== 200) throw holderRefused(answer);
  return { before, view: answer.body as ContextView };
};
