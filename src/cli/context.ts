// What every command gets: its streams, colours, and the environment; plus opening the log and finding contexts.
import type { EventStore, LogReads } from "../events/store.ts";
import type { ProjectionQueries, Projections } from "../projections/engine.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { Paint } from "./ansi.ts";
import { CliError } from "./errors.ts";
import { openLogOrHolder, type Holder } from "./holder.ts";
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

/**
 * What a command that reads gets: through a holder (`holder` set), the log's reads and the projections' queries only;
 * else the log opened here.
 */
export type ReadLog =
  { store: LogReads; projections: ProjectionQueries; holder: Holder } | (OpenedLog & { holder?: undefined });
/** What a command that opens the log itself gets (`throughHolder: false`): the store and the projections' engine. */
export type OpenedLog = { store: EventStore; projections: Projections };

type WithLogOptions = {
  create: boolean;
  projections?: boolean;
  /** False: a held dir is an error, not read through its holder. */
  throughHolder?: boolean;
  /** A command that only reads: a log found changed still opens (see openLog). */
  readOnly?: boolean;
};

/**
 * Opens the log (and its projections, caught up), runs `work`, and closes the log whatever happens.
 * A PGlite data dir another process holds is read through that process's control socket (`holder` is then set).
 */
export function withLog<T>(
  where: LogLocation,
  options: WithLogOptions & { throughHolder: false },
  work: (log: OpenedLog) => Promise<T>,
): Promise<T>;
export function withLog<T>(where: LogLocation, options: WithLogOptions, work: (log: ReadLog) => Promise<T>): Promise<T>;
export async function withLog<T>(
  where: LogLocation,
  options: WithLogOptions,
  work: (log: OpenedLog) => Promise<T>,
): Promise<T> {
  if (where.kind === "memory" && !options.create) {
    throw new CliError(
      "--store memory keeps nothing between commands: it is for run; point this command at a data dir or PostgreSQL",
    );
  }
  const opened =
    options.throughHolder === false ? { store: await openLog(where, options) } : await openLogOrHolder(where, options);
  if (opened.holder) {
    const { remoteLog } = await import("./remoteLog.ts");
    const log = await remoteLog(opened.holder);
    try {
      // Only a ReadLog's members are there: the overload a command reading through a holder has says so.
      return await (work as (log: ReadLog) => Promise<T>)({ ...log, holder: opened.holder });
    } finally {
      await log.store.close();
    }
  }
  const store = opened.store;
  try {
    const { openProjections } = await import("../projections/engine.ts");
    const projections = options.projections === false ? (undefined as never) : await openProjections(store);
    return await work({ store, projections });
  } finally {
    await store.close();
  }
}

/** The context an `<id>` argument names: the whole id, or a prefix of it that only one context has. */
export const resolveContext = async (
  projections: Pick<Projections, "contexts">,
  arg: string,
  where: LogLocation,
): Promise<ContextView> => {
  const id = arg.trim().toLowerCase();
  if (!/^[0-9a-f-]{1,36}$/.test(id))
    throw new CliError(`'${arg}' is not a context id (ids look like 1a2b3c4d-…; see actorzero contexts)`);
  const exact = await projections.contexts.get(id);
  if (exact) return exact;
  const matches = (await projections.contexts.list()).filter((c) => c.id.startsWith(id));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0)
    throw new CliError(`no context '${arg}' in ${describeLocation(where)} (see actorzero contexts)`);
  throw new CliError(
    `'${arg}' matches ${matches.length} contexts (${matches
      .slice(0, 4)
      .map((c) => c.id.slice(0, 13))
      .join(", ")}${matches.length > 4 ? ", …" : ""}): give more of the id`,
  );
};
