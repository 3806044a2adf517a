// One process at a time per PGlite data dir: a lock file created with O_EXCL, taken over when its holder is dead.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { StoreError } from "./errors.ts";

export const LOCK_FILE_NAME = "actorzero.lock";

type LockInfo = { pid: number; hostname: string; startedAt: string };

export type DataDirLock = {
  readonly file: string;
  /** Removes the lock file if it is still ours; idempotent. */
  release(): void;
};

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};

const readLock = (file: string): LockInfo | undefined => {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<LockInfo>;
    if (typeof parsed.pid === "number" && typeof parsed.hostname === "string") {
      return { pid: parsed.pid, hostname: parsed.hostname, startedAt: String(parsed.startedAt ?? "") };
    }
  } catch {
    // missing, half-written or not JSON: treated below
  }
  return undefined;
};

const sameLock = (a: LockInfo | undefined, b: LockInfo) =>
  a !== undefined && a.pid === b.pid && a.hostname === b.hostname && a.startedAt === b.startedAt;

/**
 * Takes the lock on `dataDir` (created when missing) for this process, or throws StoreError `locked`
 * naming the holder. A lock whose holder process is dead (on this host) is taken over. The lock is
 * released by `release()` and, as a last resort, when this process exits normally.
 *
 * Known limits: a lock written on another host is never taken over (its pid cannot be checked), and
 * a dead holder whose pid was reused by an unrelated process looks alive.
 */
export const acquireDataDirLock = (dataDir: string): DataDirLock => {
  // A new data dir is its owner's only (0700, whatever the umask: mkdir's mode only ever loses bits to it), as
  // PostgreSQL makes its own: the log, the lock and the control socket inside are nobody else's to read or reach.
  if (!fs.existsSync(dataDir)) {
    fs.mkdirSync(path.dirname(path.resolve(dataDir)), { recursive: true });
    try {
      fs.mkdirSync(dataDir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
  }
  const file = path.join(dataDir, LOCK_FILE_NAME);
  const mine: LockInfo = { pid: process.pid, hostname: os.hostname(), startedAt: new Date().toISOString() };

  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = fs.openSync(file, "wx");
      try {
        fs.writeSync(fd, JSON.stringify(mine));
      } finally {
        fs.closeSync(fd);
      }
      // Two processes taking over the same stale lock could both get here; only the last writer's
      // content survives, so the other one sees it is not the holder.
      if (!sameLock(readLock(file), mine)) continue;
      return held(file, mine);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const holder = readLock(file);
    if (holder === undefined) {
      // Being written right now, or left half-written by a crash: give a writer a moment first.
      if (attempt < 2) {
        sleepSync(20);
        continue;
      }
    } else if (holder.hostname !== mine.hostname || isAlive(holder.pid)) {
      const where = holder.hostname === mine.hostname ? "" : ` on host ${holder.hostname}`;
      throw new StoreError(
        "locked",
        `data dir ${dataDir} is in use by process ${holder.pid}${where} (since ${holder.startedAt}); ` +
          `a PGlite data dir belongs to one process at a time. Close that store, or use PostgreSQL to share one log between processes.`,
      );
    }
    // The holder is dead (or the file is garbage): take the lock over.
    try {
      fs.unlinkSync(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
  throw new StoreError(
    "locked",
    `data dir ${dataDir}: could not take the lock file ${file}; another process keeps taking it.`,
  );
};

const held = (file: string, mine: LockInfo): DataDirLock => {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    heldLocks.delete(release);
    if (sameLock(readLock(file), mine)) {
      try {
        fs.unlinkSync(file);
      } catch {
        // already gone
      }
    }
  };
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", releaseAllOnExit);
  }
  heldLocks.add(release);
  return { file, release };
};

// One exit hook for all locks of this process, so opening many stores adds no listeners.
const heldLocks = new Set<() => void>();
let exitHookInstalled = false;
const releaseAllOnExit = () => {
  for (const release of [...heldLocks]) release();
};

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
