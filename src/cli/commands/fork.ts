// `actorzero fork <id> --at <position>`: a new root whose history is the context's own up to that log position.
import { loadConfig } from "../config.ts";
import { resolveContext, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { intFlag } from "../flags.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { chooseModel } from "../modelChoice.ts";
import type { ContextView } from "../../projections/contexts.ts";
import { holderContexts, holderRefused, openLogOrHolder } from "../holder.ts";
import { locate, locationFlags } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";

export const forkSpec = defineCommand({
  name: "fork",
  summary:
    "A new root whose history is a context's own up to one of its events (--at <position>), to run again from there.",
  usage: ["fork <id> --at <position> [--json]"],
  args: [{ name: "<id>", id: true }],
  flags: {
    ...STORE_FLAGS,
    at: {
      type: "string",
      value: "<position>",
      description: "the log position (#n in audit, the first column of events) of an event of that context",
      schema: intFlag("--at", 1, "the log position of one of the context's events"),
    },
    ...JSON_FLAG,
  },
  details: `The source is untouched. The fork is a root of its own (forking a subordinate forks only it), its
history is a copy of the source's events up to and including the one at --at, and it records where it came
from (audit shows the link). A run that the cut leaves open is recorded as interrupted in the fork.
On a data dir that actorzero run, send or serve holds, that process records the fork (its control socket).
Continue it with actorzero send <fork id> "<message>", e.g. with another --model.
--json: { contextId, forkedFrom: { contextId, position } }.`,
});
type Values = ValuesOf<typeof forkSpec>;

export const forkCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "fork");
  const opened = await openLogOrHolder(where, { create: false });
  let source: ContextView;
  let forkId: string;
  if (opened.holder) {
    // The process holding the data dir records the fork (the same route `serve` offers, under the act role).
    source = await resolveContext(holderContexts(opened.holder), v.positionals["<id>"]!, where);
    const answer = await opened.holder.call("POST", `/v1/contexts/${source.id}/fork`, { at: v.at });
    if (answer.status !== 201) throw holderRefused(answer);
    forkId = (answer.body as ContextView).id;
  } else {
    const store = opened.store;
    try {
      const { openProjections } = await import("../../projections/engine.ts");
      source = await resolveContext(await openProjections(store), v.positionals["<id>"]!, where);
      const rt = await runtimeFor(store, loadConfig(io.cwd), await chooseModel({ offline: true }, {}, io.env));
      try {
        forkId = (await rt.fork(source.id, { at: v.at })).id;
      } finally {
        await rt.close();
      }
    } finally {
      await store.close();
    }
  }
  if (v.json) {
    io.print(JSON.stringify({ contextId: forkId, forkedFrom: { contextId: source.id, position: v.at } }));
    return EXIT.ok;
  }
  io.print(
    `forked A${source.agentNumber} ${source.profile} ${source.id.slice(0, 8)} at log position ${v.at} into a new root ${forkId}`,
  );
  io.print(io.paint.dim(`continue it: actorzero send ${forkId.slice(0, 8)} "<message>"${locationFlags(where)}`));
  return EXIT.ok;
};
