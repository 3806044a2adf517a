// `actorzero stop <id>`: stops a context's run and, with it, every running subordinate below it.
// Requirements: a PGlite data dir another process holds is asked through that process (its control socket), so the
// run stops there and is recorded as stopped by the user; the same words and --json either way.
import type { EventStore } from "../../events/store.ts";
import type { ContextView } from "../../projections/contexts.ts";
import type { RunOutcome } from "../../projections/runOutcome.ts";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { holderContexts, holderRefused, openLogOrHolder, type Holder } from "../holder.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate, type LogLocation } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";
import { shownStatus } from "../status.ts";

export const stopSpec = defineCommand({
  name: "stop",
  summary: "Stop a context's run and its running subordinates, down the tree (recorded as stopped).",
  usage: ["stop <id> [--json]"],
  args: [{ name: "<id>", id: true }],
  flags: { ...STORE_FLAGS, ...JSON_FLAG },
  details: `On a data dir that actorzero run, send or serve holds, the stop goes to that process (its control socket):
the run stops there, recorded as stopped by the user, and this command reports it once it is recorded.
Opened here, a run with no end recorded was cut short (its process is gone); it is recorded as interrupted.
--json: { contextId, wasRunning, stopped, status }.`,
});
type Values = ValuesOf<typeof stopSpec>;

type Stopped = { before: ContextView; outcome: RunOutcome | null; after: ContextView };

export const stopCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "stop");
  const opened = await openLogOrHolder(where, { create: false });
  const done = opened.holder
    ? await stopThrough(opened.holder, v.positionals["<id>"]!, where)
    : await stopHere(opened.store, v, io, where);
  const { before, outcome, after } = done;
  const status = shownStatus(after);
  if (v.json) {
    io.print(
      JSON.stringify({
        contextId: before.id,
        wasRunning: before.status === "running",
        stopped: outcome !== null,
        status,
      }),
    );
    return EXIT.ok;
  }
  const who = `A${after.agentNumber} ${after.profile} ${after.id.slice(0, 8)}`;
  if (outcome) io.print(`${who} stopped, with every subordinate that was running below it`);
  else if (before.status === "running" && status === "interrupted") {
    io.print(
      `${who} was not running in any process: its last run had no end recorded, so it is now recorded as interrupted`,
    );
  } else io.print(`${who} is not running (${status}); nothing to stop`);
  return EXIT.ok;
};

const stopHere = async (store: EventStore, v: Values, io: Io, where: LogLocation): Promise<Stopped> => {
  try {
    const { openProjections } = await import("../../projections/engine.ts");
    const before = await resolveContext(await openProjections(store), v.positionals["<id>"]!, where);
    const rt = await runtimeFor(store, loadConfig(io.cwd), await chooseModel({ offline: true }, {}, io.env));
    try {
      const outcome = await rt.stop(before.id);
      return { before, outcome, after: (await rt.context(before.id))! };
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
};

/** The holder stops the run; its answer comes once RunStopped is recorded. */
const stopThrough = async (holder: Holder, arg: string, where: LogLocation): Promise<Stopped> => {
  const before = await resolveContext(holderContexts(holder), arg, where);
  const answer = await holder.call("POST", `/v1/contexts/${before.id}/stop`);
  if (answer.status === 200)
    return { before, outcome: answer.body.outcome as RunOutcome, after: answer.body.context as ContextView };
  if (answer.status !== 409) throw holderRefused(answer);
  const now = await holder.call("GET", `/v1/contexts/${before.id}`);
  if (now.status !== 200) throw holderRefused(now);
  return { before, outcome: null, after: now.body as ContextView };
};
