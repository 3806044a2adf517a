// A throwaway PostgreSQL cluster for tests and benchmarks: initdb into a temp dir, start on 127.0.0.1, remove on stop.
//
// Usage:
//   const cluster = await startPgCluster();          // throws PgClusterUnavailable when no server binaries are found
//   const url = await cluster.createDatabase();      // a fresh, empty database per test file or bench
//   … await cluster.stop();
//
// The binaries are found in ACTORZERO_PG_BIN, else the newest /usr/lib/postgresql/<n>/bin, else PATH.
// When run as root the server runs as the `postgres` user (PostgreSQL refuses to run as root).
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** No server binaries here, or the server did not start: the reason says which. */
export class PgClusterUnavailable extends Error {
  override readonly name = "PgClusterUnavailable";
}

export type PgCluster = {
  /** The `postgres` database of the cluster, as the superuser `postgres` (trust auth). */
  readonly url: string;
  readonly dataDir: string;
  /** Creates an empty database with a random name and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server at once and removes its files; safe to call twice. */
  stop(): Promise<void>;
};

export type PgClusterOptions = {
  /** Extra `-c name=value` server settings, after the defaults (fsync off: throwaway data). */
  settings?: Record<string, string | number>;
};

/** The directory holding initdb, pg_ctl and postgres, or undefined. */
export const findPgBin = (): string | undefined => {
  const has = (dir: string) => fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"));
  const fromEnv = process.env.ACTORZERO_PG_BIN;
  if (fromEnv) return has(fromEnv) ? fromEnv : undefined;
  const root = "/usr/lib/postgresql";
  if (fs.existsSync(root)) {
    const versions = fs
      .readdirSync(root)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(path.join(root, v, "bin"))) return path.join(root, v, "bin");
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) if (dir && has(dir)) return dir;
  return undefined;
};

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** Runs a server binary, as `postgres` when we are root. */
const asServerUser = (bin: string, args: string[]): [string, string[]] =>
  isRoot() ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];

const BASE_SETTINGS: Record<string, string | number> = {
  fsync: "off",
  synchronous_commit: "off",
  full_page_writes: "off",
  max_connections: 200,
  shared_buffers: "128MB",
};

/**
 * Starts a fresh cluster listening only on 127.0.0.1 on a free port, trust auth, fsync off.
 * Throws PgClusterUnavailable with the reason when it cannot.
 */
export const startPgCluster = async (options: PgClusterOptions = {}): Promise<PgCluster> => {
  const bin = findPgBin();
  if (!bin) {
    throw new PgClusterUnavailable(
      "no PostgreSQL server binaries (initdb, pg_ctl) found in ACTORZERO_PG_BIN, /usr/lib/postgresql/<n>/bin or PATH; install postgresql-15 or set ACTORZERO_PG_URL",
    );
  }
  if (isRoot()) {
    try {
      execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
    } catch {
      throw new PgClusterUnavailable("running as root and there is no `postgres` user to run the server as");
    }
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-pg-"));
  if (isRoot()) execFileSync("chown", ["postgres:", dataDir]);
  const exec = async (tool: string, args: string[]) => {
    const [cmd, argv] = asServerUser(path.join(bin, tool), args);
    return run(cmd, argv, { timeout: 60_000 });
  };
  let stopped = false;
  let started = false;
  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    if (started) {
      const [cmd, argv] = asServerUser(path.join(bin, "pg_ctl"), ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
      spawnSync(cmd, argv, { stdio: "ignore", timeout: 30_000 });
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  // A crashed or interrupted test run must not leave a server behind.
  process.once("exit", stopSync);
  try {
    await exec("initdb", [
      "-D",
      dataDir,
      "-U",
      "postgres",
      "--auth=trust",
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync",
      "--no-instructions",
    ]);
    const port = await freePort();
    const settings = {
      ...BASE_SETTINGS,
      ...options.settings,
      listen_addresses: "127.0.0.1",
      port,
      unix_socket_directories: dataDir,
    };
    const serverArgs = Object.entries(settings)
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(" ");
    started = true;
    await exec("pg_ctl", [
      "-D",
      dataDir,
      "-l",
      path.join(dataDir, "server.log"),
      "-w",
      "-t",
      "60",
      "-o",
      serverArgs,
      "start",
    ]);
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    return {
      url,
      dataDir,
      createDatabase: (prefix = "actorzero") => createDatabase(url, prefix),
      stop: async () => {
        process.removeListener("exit", stopSync);
        stopSync();
      },
    };
  } catch (e) {
    const log = readLog(dataDir);
    process.removeListener("exit", stopSync);
    stopSync();
    if (e instanceof PgClusterUnavailable) throw e;
    const err = e as Error & { stderr?: string };
    throw new PgClusterUnavailable(
      `the PostgreSQL server did not start: ${err.stderr?.trim() || err.message}${log ? `\n${log}` : ""}`,
      { cause: e },
    );
  }
};

const readLog = (dataDir: string) => {
  try {
    return fs.readFileSync(path.join(dataDir, "server.log"), "utf8").split("\n").slice(-20).join("\n");
  } catch {
    return "";
  }
};

/** psql, which runs the admin statements (only src/events/postgresStore.ts imports `pg`). */
const psql = (): string => {
  const bin = findPgBin();
  if (bin && fs.existsSync(path.join(bin, "psql"))) return path.join(bin, "psql");
  return "psql";
};

const admin = async (url: string, sql: string) => {
  await run(psql(), ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], { timeout: 60_000 });
};

/** Creates an empty database with a random name on the server at `adminUrl` and returns its URL. */
export const createDatabase = async (adminUrl: string, prefix = "actorzero"): Promise<string> => {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  await admin(adminUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

/** Drops the database named in `url` (closing its other connections), through the server's `postgres` database. */
export const dropDatabase = async (url: string): Promise<void> => {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const adminUrl = new URL(url);
  adminUrl.pathname = "/postgres";
  await admin(adminUrl.toString(), `DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
};
