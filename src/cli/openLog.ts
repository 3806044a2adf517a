// Opens the event log a command names: a PGlite data dir (default ./.actorzero), memory, or a PostgreSQL URL.
import { redactSecrets } from "../events/redact.ts";
import fs from "node:fs";
import path from "node:path";
import type { EventStore } from "../events/store.ts";
import { CliError, usageError } from "./errors.ts";
import type { StoreFlags } from "./flags.ts";

export const DEFAULT_DATA_DIR = ".actorzero";

export type LogLocation =
  | { kind: "pglite"; dataDir: string; /** As the user wrote it, for messages and suggested commands. */ shown: string }
  | { kind: "memory" }
  | { kind: "postgres"; url: string };

/** Where the flags point; a usage error when they contradict each other. */
export const locate = (flags: StoreFlags, command: string): LogLocation => {
  const store = flags.store ?? "pglite";
  if (store !== "pglite" && flags["data-dir"] !== undefined) {
    throw usageError(
      `--data-dir is for a PGlite log; it cannot go with --store ${store === "memory" ? "memory" : "postgres://…"}`,
      command,
    );
  }
  if (store === "memory") return { kind: "memory" };
  if (store !== "pglite") return { kind: "postgres", url: store };
  const shown = flags["data-dir"] ?? `./${DEFAULT_DATA_DIR}`;
  return { kind: "pglite", dataDir: path.resolve(shown), shown };
};

/** A PostgreSQL URL without its password, for messages. */
export const redactUrl = (url: string): string => redactSecrets(url);

export const describeLocation = (where: LogLocation): string =>
  where.kind === "pglite"
    ? `data dir ${where.shown}`
    : where.kind === "memory"
      ? "an in-memory log (kept until this command ends)"
      : `PostgreSQL at ${redactUrl(where.url)}`;

/** The flags that point a later command at the same log (empty for the default data dir). */
export const locationFlags = (where: LogLocation): string => {
  if (where.kind === "pglite")
    return where.shown === `./${DEFAULT_DATA_DIR}` ? "" : ` --data-dir ${quoteArg(where.shown)}`;
  if (where.kind === "postgres") return ` --store ${quoteArg(redactUrl(where.url))}`;
  return "";
};

const quoteArg = (s: string) => (/^[\w./:@*-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

/**
 * Opens the store. `create: false` refuses a data dir that holds no log yet, instead of making one;
 * `schema: "existing"` also leaves the database's schema as it is (no log created, none upgraded);
 * `readOnly`: a command that only reads, which a log found changed since its last check does not refuse
 * (opening for writing does: StoreError `tampered`);
 * a data dir another process holds gives StoreError `locked`, naming the holder.
 */
export const openLog = async (
  where: LogLocation,
  options: { create: boolean; schema?: "existing"; readOnly?: boolean },
): Promise<EventStore> => {
  // Loaded on demand: help and usage errors should not pay for PGlite.
  const { openPgliteStore } = await import("../events/pgliteStore.ts");
  switch (where.kind) {
    case "memory":
      return openPgliteStore();
    case "postgres":
      return openPostgres(where.url, options.schema, options.readOnly);
    case "pglite": {
      checkDataDir(where, options.create);
      return openPgliteStore({
        dataDir: where.dataDir,
        ...(options.schema ? { schema: options.schema } : {}),
        ...(options.readOnly ? { readOnly: true } : {}),
      });
    }
  }
};

const checkDataDir = (where: Extract<LogLocation, { kind: "pglite" }>, create: boolean) => {
  const dir = where.dataDir;
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT")
      throw new CliError(`cannot read the data dir ${where.shown}: ${(e as Error).message}`);
  }
  if (stat && !stat.isDirectory()) throw new CliError(`cannot use ${where.shown} as a data dir: it is not a directory`);
  const hasLog = stat !== undefined && fs.existsSync(path.join(dir, "PG_VERSION"));
  if (!hasLog && !create) {
    throw new CliError(
      `no event log in ${where.shown} yet: start one with \`actorzero run "<task>"\`, or point --data-dir at an existing one`,
    );
  }
  if (stat) {
    try {
      fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    } catch {
      throw new CliError(`cannot use the data dir ${where.shown}: it is not readable and writable by this user`);
    }
  }
  if (stat && !hasLog && fs.readdirSync(dir).some((f) => f !== "actorzero.lock")) {
    throw new CliError(`cannot use ${where.shown} as a data dir: it holds other files but no event log`);
  }
};

/** The PostgreSQL adapter is loaded only when asked for, so a PGlite-only install never loads `pg`. */
const openPostgres = async (url: string, schema?: "existing", readOnly?: boolean): Promise<EventStore> => {
  const modulePath = "../events/postgresStore.ts";
  let mod: { openPostgresStore?: (o: { url: string; schema?: "existing"; readOnly?: boolean }) => Promise<EventStore> };
  try {
    mod = (await import(modulePath)) as typeof mod;
  } catch {
    throw new CliError("PostgreSQL stores are not available in this build of actorzero");
  }
  if (typeof mod.openPostgresStore !== "function")
    throw new CliError("PostgreSQL stores are not available in this build of actorzero");
  return mod.openPostgresStore({ url, ...(schema ? { schema } : {}), ...(readOnly ? { readOnly } : {}) });
};
