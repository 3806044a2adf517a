// `actorzero stop <id>`: stops a context's run and, with it, every running subordinate below it.
import { z } from "zod";
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { JSON_OPTION, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { chooseModel } from "../modelChoice.ts";
import { locate, openLog } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";
import { shownStatus } from "../status.ts";

const Values = StoreFlags.extend({
  positionals: positionals("stop", [{ name: "<id>", id: true }]),
  json: z.boolean().optional(),
});
type Values = z.infer<typeof Values>;

export const stopSpec: CommandSpec<Values> = {
  name: "stop",
  summary: "Stop a context's run and its running subordinates, down the tree (recorded as stopped).",
  usage: ["stop <id> [--json]"],
  options: { ...STORE_OPTIONS, ...JSON_OPTION },
  details: `A PGlite data dir belongs to the process that runs it: stop a run there with Ctrl-C in that process.
Opened here, a run with no end recorded was cut short (its process is gone); it is recorded as interrupted.
--json: { contextId, wasRunning, stopped, status }.`,
  schema: Values as z.ZodType<Values>,
};

export const stopCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "stop");
  const store = await openLog(where, { create: false });
  try {
    const { openProjections } = await import("../../projections/engine.ts");
    const before = await resolveContext(await openProjections(store), v.positionals["<id>"]!, where);
    const rt = await runtimeFor(store, loadConfig(io.cwd), await chooseModel({ offline: true }, {}, io.env));
    try {
      const outcome = await rt.stop(before.id);
      const after = (await rt.context(before.id))!;
      const status = shownStatus(after);
      if (v.json) {
        io.print(JSON.stringify({ contextId: before.id, wasRunning: before.status === "running", stopped: outcome !== null, status }));
        return EXIT.ok;
      }
      const who = `A${after.agentNumber} ${after.profile} ${after.id.slice(0, 8)}`;
      if (outcome) io.print(`${who} stopped, with every subordinate that was running below it`);
      else if (before.status === "running" && status === "interrupted") {
        io.print(`${who} was not running in any process: its last run had no end recorded, so it is now recorded as interrupted`);
      } else io.print(`${who} is not running (${status}); nothing to stop`);
      return EXIT.ok;
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
};
