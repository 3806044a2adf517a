// A full disk is an error, never a hang: the PGlite store keeps a reserve of free space on its data dir's file
// system and refuses an append (StoreError `disk_full`) that would eat into it, so PGlite never meets ENOSPC.
//
// Why a reserve and not the error itself: once a WAL write fails with ENOSPC, PGlite's WebAssembly spins at 100%
// CPU inside the failed write and never returns (the event loop is blocked; freeing space does not help). A
// failure in a table file returns an error, but which file a write reaches first cannot be chosen. So nothing is
// sent to PGlite unless the space it may take is there.
//
// Requirements:
// - The rule: an append goes to PGlite only while the file system keeps RESERVE_BYTES free after it, counting
//   the append's SQL text EXPANSION times (its rows, their WAL, index and TOAST pages). The reserve is larger
//   than what one batch (at most 1 MB of SQL, appendBatcher.ts) plus a WAL segment (1 MB) plus a checkpoint's
//   WAL (max_wal_size 4 MB) can need, with room for the writes an append brings after it (projections, seals).
// - Cheap on the append path: free space is read with statfs (one syscall) only when 1 MB of SQL went out since
//   the last read, 250 ms passed, or the last read left less than twice the reserve; otherwise an append costs
//   a subtraction. What another process writes to the same file system within those bounds is not seen at
//   once: the reserve is sized to absorb it.
// - Once space is freed, the next append reads statfs again (it is under twice the reserve) and goes through.
// - Opening a data dir needs the reserve too (plus the image for a new one): PGlite writes at start.
import fs from "node:fs";
import path from "node:path";
import { StoreError } from "./errors.ts";

/** Free bytes kept on the data dir's file system: appends that would go below are refused. */
export const RESERVE_BYTES = 64 * 1024 * 1024;
/** How many bytes of disk an append may take per byte of its SQL text, at most (rows, WAL, indexes, TOAST). */
export const EXPANSION = 4;
const RECHECK_BYTES = 1024 * 1024;
const RECHECK_MS = 250;

/** Free bytes an unprivileged process may use on the file system holding `dir`. */
export const freeBytes = (dir: string): number => {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
};

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export const diskFull = (dir: string, free: number, needed: number, doing: string) =>
  new StoreError(
    "disk_full",
    `the disk holding ${dir} is full: ${mb(free)} free, and ${doing} needs ${mb(needed)} free (the log keeps ${mb(RESERVE_BYTES)} free so that it is never cut mid-write); free some space and try again`,
  );

/** Refuses (StoreError `disk_full`) to open a data dir on a file system without the reserve, plus `extra` bytes. */
export const checkSpaceToOpen = (dir: string, extra = 0): void => {
  // A new data dir is not there yet: the file system is its nearest existing parent's.
  let existing = path.resolve(dir);
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  const free = freeBytes(existing);
  if (free < RESERVE_BYTES + extra) throw diskFull(dir, free, RESERVE_BYTES + extra, "opening the log");
};

export type DiskReserve = {
  /** Throws StoreError `disk_full` when an append of `sqlChars` of SQL could eat into the reserve. */
  check(sqlChars: number): void;
};

/**
 * The reserve of one data dir; `free` reads the file system (statfs by default).
 *
 * @example
 * const reserve = diskReserve(dataDir);
 * reserve.check(statement.length); // before the statement goes to PGlite
 */
export const diskReserve = (
  dir: string,
  free: () => number = () => freeBytes(dir),
  now: () => number = Date.now,
): DiskReserve => {
  let known = 0;
  let readAt = -Infinity;
  let sent = 0;
  return {
    check(sqlChars) {
      const needed = sqlChars * EXPANSION;
      const stale =
        sent >= RECHECK_BYTES || now() - readAt >= RECHECK_MS || known - sent * EXPANSION - needed < 2 * RESERVE_BYTES;
      if (stale) {
        known = free();
        readAt = now();
        sent = 0;
      }
      const left = known - sent * EXPANSION - needed;
      if (left < RESERVE_BYTES) throw diskFull(dir, known - sent * EXPANSION, RESERVE_BYTES + needed, "an append");
      sent += sqlChars;
    },
  };
};
