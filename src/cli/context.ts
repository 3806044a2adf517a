// What every command gets: its streams, colours, and the environment; plus opening the log and finding contexts.
import type { EventStore } from "../events/store.ts";
import type { Projections } from "../projections/engine.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { Paint } from "./ansi.ts";
import { CliError } from "./errors.ts";
import { describeLocation, openLog, type LogLocation } from "./openLog.ts";

export type Io = {
  out: NodeJS.WriteStream;
  err: NodeJS.WriteStream;
  paint: Paint;
  env: NodeJS.ProcessEnv;
  cwd: string;
  print(line?: string): void;
  warn(line: string): void;
};

/** Opens the log (and its projections, caught up), runs `work`, and closes the log whatever happens. */
export const withLog = async <T>(
  where: LogLocation,
  options: { create: boolean; projections?: boolean },
  work: (log: { store: EventStore; projections: Projections }) => Promise<T>,
): Promise<T> => {
  if (where.kind === "memory" && !options.create) {
    throw new CliError("--store memory keeps nothing between commands: it is for run; point this command at a data dir or PostgreSQL");
  }
  const store = await openLog(where, options);
  try {
    const { openProjections } = await import("../projections/engine.ts");
    const projections = options.projections === false ? (undefined as never) : await openProjections(store);
    return await work({ store, projections });
  } finally {
    await store.close();
  }
};

/** The context an `<id>` argument names: the whole id, or a prefix of it that only one context has. */
export const resolveContext = async (projections: Projections, arg: string, where: LogLocation): Promise<ContextView> => {
  const id = arg.trim().toLowerCase();
  if (!/^[0-9a-f-]{1,36}$/.test(id)) throw new CliError(`'${arg}' is not a context id (ids look like 1a2b3c4d-…; see actorzero contexts)`);
  const exact = await projections.contexts.get(id);
  if (exact) return exact;
  const matches = (await projections.contexts.list()).filter((c) => c.id.startsWith(id));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new CliError(`no context '${arg}' in ${describeLocation(where)} (see actorzero contexts)`);
  throw new CliError(
    `'${arg}' matches ${matches.length} contexts (${matches
      .slice(0, 4)
      .map((c) => c.id.slice(0, 13))
      .join(", ")}${matches.length > 4 ? ", …" : ""}): give more of the id`,
  );
};
