// The pre-initialised PGlite database image that new stores start from, and the settings PGlite runs with.
//
// Requirements:
// - No initdb at run time: initdb costs seconds and a second WebAssembly instance (~800 MB peak).
//   The image (initdb + the event log schema, as a tarball) is built once and cached on disk,
//   uncompressed (gunzip cost as much as the rest of reading it) with a CRC-32 that is checked on read.
// - A new data dir gets the image written by Node's fs, then is opened as an existing one; an
//   in-memory store gets it as its file system before PostgreSQL starts (both in pgliteTar.ts).
// - The cache key changes whenever the image would: PGlite's version, the schema DDL text and the
//   settings below are hashed into the file name, so a changed DDL never loads a stale image.
// - A small data dir: 1 MB WAL segments (an initdb choice, baked into the image), only the
//   `postgres` database (template0/1 are dropped: nothing here creates databases), no recycled WAL.
// - A small heap: modest shared_buffers/wal_buffers; PGlite's WebAssembly memory never shrinks,
//   so whatever PostgreSQL allocates once stays for the life of the store.
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { PGlite } from "@electric-sql/pglite";
import { NOTIFY_SETTING, SCHEMA_SQL } from "./sql.ts";
import { pgliteWasmModule } from "./pgliteWasm.ts";
import { TarMemoryFS, writeTarInto } from "./pgliteTar.ts";
import { LOCK_FILE_NAME } from "./dataDirLock.ts";

/** WAL segment size of the image, in MB (initdb `--wal-segsize`). */
const WAL_SEGMENT_MB = 1;

/**
 * Settings on top of PGlite's defaults (which already run single-user with `-F`: writes reach the
 * OS on commit, so a SIGKILL loses nothing; only an OS crash can lose the last commits).
 */
const TUNING = [
  "-c",
  "shared_buffers=8MB", // the log's working set is small; 128 MB (default) only grows the heap
  "-c",
  "wal_buffers=256kB",
  "-c",
  "work_mem=2MB",
  "-c",
  "maintenance_work_mem=8MB",
  "-c",
  "autovacuum=off", // single-user mode runs no autovacuum worker; the log is append-only anyway
  "-c",
  "wal_recycle=off", // delete old segments instead of keeping them renamed for reuse
  "-c",
  "wal_init_zero=off", // new segments are sparse files, not 1 MB of zeroes each
  "-c",
  `${NOTIFY_SETTING}=off`, // one process holds the log and its store tells its own subscribers: no one LISTENs
];
/** WAL retention sized to 1 MB segments; PostgreSQL refuses these below twice the segment size. */
const SMALL_WAL = ["-c", `min_wal_size=${2 * WAL_SEGMENT_MB}MB`, "-c", `max_wal_size=${4 * WAL_SEGMENT_MB}MB`];

const defaultStartParams = (): string[] => (PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams;

/**
 * PGlite's start parameters for a data dir whose WAL segments are `walSegmentBytes` long (the
 * image's size when unknown). Older data dirs with 16 MB segments keep PostgreSQL's WAL sizes.
 */
export const pgliteStartParams = (walSegmentBytes: number = WAL_SEGMENT_MB * 1024 * 1024): string[] => [
  ...defaultStartParams(),
  ...TUNING,
  ...(walSegmentBytes <= WAL_SEGMENT_MB * 1024 * 1024 ? SMALL_WAL : []),
];

/** The WAL segment size of an existing data dir, read from the size of a segment file. */
export const walSegmentBytes = (dataDir: string): number | undefined => {
  try {
    const wal = path.join(dataDir, "pg_wal");
    const segment = fs.readdirSync(wal).find((f) => /^[0-9A-F]{24}$/.test(f));
    return segment === undefined ? undefined : fs.statSync(path.join(wal, segment)).size;
  } catch {
    return undefined;
  }
};

const pgliteVersion = (): string => {
  try {
    const require = createRequire(import.meta.url);
    return (require("@electric-sql/pglite/package.json") as { version: string }).version;
  } catch {
    return "unknown";
  }
};

/** What the image depends on; part of its file name. */
export const imageKey = (): string =>
  createHash("sha256")
    .update([pgliteVersion(), String(WAL_SEGMENT_MB), SCHEMA_SQL, TUNING.join(" "), ...IMAGE_PREP_SQL].join("\0"))
    .digest("hex")
    .slice(0, 16);

/** Where images are cached: ACTORZERO_CACHE_DIR, else the OS temp dir. */
export const imageCacheDir = (): string =>
  process.env["ACTORZERO_CACHE_DIR"] ?? path.join(os.tmpdir(), "actorzero-cache");

// Nothing in the runtime creates databases, so the two templates (a third of the data dir) go; the
// catalog comments are for humans at a psql prompt.
const IMAGE_PREP_SQL = [
  "ALTER DATABASE template0 IS_TEMPLATE false",
  "ALTER DATABASE template0 ALLOW_CONNECTIONS true",
  "DROP DATABASE template0",
  "ALTER DATABASE template1 IS_TEMPLATE false",
  "DROP DATABASE template1",
  "DELETE FROM pg_description",
  "DELETE FROM pg_statistic",
];

let memo: { key: string; tar: Promise<Uint8Array> } | undefined;

/** The image's tarball: read from the cache, or built (once per process, then cached for the next ones). */
const imageTar = (): Promise<Uint8Array> => {
  const key = imageKey();
  if (memo?.key !== key) {
    const tar = loadOrBuild(key);
    memo = { key, tar };
    tar.catch(() => {
      if (memo?.tar === tar) memo = undefined;
    });
  }
  return memo.tar;
};

/** The image as the file system of a new in-memory PGlite (its `fs` option); each call gets its own copy. */
export const pgliteImageFs = async (): Promise<TarMemoryFS> => new TarMemoryFS(new Uint8Array(await imageTar()));

/** Marks a data dir whose image is being written; found without PG_VERSION beside it, the writing was cut short. */
export const IMAGE_PARTIAL_MARK = "actorzero-image.partial";

/**
 * Writes the image into `dataDir`, which holds nothing but its lock file, or that and what a write cut
 * short left (removed first). The new data dir is then opened as it is.
 */
export const writePgliteImage = async (dataDir: string): Promise<void> => {
  const tar = await imageTar();
  const mark = path.join(dataDir, IMAGE_PARTIAL_MARK);
  if (fs.existsSync(mark)) {
    for (const entry of fs.readdirSync(dataDir))
      if (entry !== LOCK_FILE_NAME) fs.rmSync(path.join(dataDir, entry), { recursive: true, force: true });
  }
  fs.writeFileSync(mark, "");
  writeTarInto(tar, dataDir);
  fs.rmSync(mark);
};

// The cached file is the tarball and its CRC-32 (4 bytes, big-endian): kept uncompressed, as gunzip cost
// as much as the rest of reading it, and checked, as gzip's own check went with it.
// (zlib.crc32 is Node 22.2's; an older 22 stores and compares 0.)
const crc32 = (bytes: Uint8Array): number => (typeof zlib.crc32 === "function" ? zlib.crc32(bytes) : 0);

const loadOrBuild = async (key: string): Promise<Uint8Array> => {
  const file = path.join(imageCacheDir(), `pglite-image-${key}.tar`);
  try {
    const cached = fs.readFileSync(file);
    const tar = cached.subarray(0, cached.length - 4);
    if (cached.length > 4 && tar.length % 512 === 0 && cached.readUInt32BE(cached.length - 4) === crc32(tar))
      return tar;
  } catch {
    // not cached yet, or unreadable: build it
  }
  const tar = await buildImage();
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // Written aside and renamed, so another process never reads half an image.
    const partial = `${file}.${process.pid}.partial`;
    const check = Buffer.alloc(4);
    check.writeUInt32BE(crc32(tar));
    fs.writeFileSync(partial, Buffer.concat([tar, check]));
    fs.renameSync(partial, file);
  } catch {
    // a cache we cannot write costs time on the next start, nothing else
  }
  return tar;
};

/** initdb + schema in a temp dir, trimmed and checkpointed, dumped as a tarball. */
const buildImage = async (): Promise<Uint8Array> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-image-"));
  try {
    const db = await PGlite.create({
      dataDir: dir,
      pgliteWasmModule: pgliteWasmModule(),
      initDbStartParams: [`--wal-segsize=${WAL_SEGMENT_MB}`],
      startParams: pgliteStartParams(),
    });
    try {
      // One statement per message: DROP DATABASE refuses to run inside a multi-statement one.
      for (const statement of IMAGE_PREP_SQL) await db.exec(statement);
      await db.exec(SCHEMA_SQL);
      await db.exec("VACUUM FULL");
      await db.exec("CHECKPOINT");
      const dump = await db.dumpDataDir("none");
      return new Uint8Array(await dump.arrayBuffer());
    } finally {
      await db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
};
