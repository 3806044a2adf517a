// What a PGlite data dir holds before it is opened: a new log's place, a write of the image cut short, or a
// database of the PostgreSQL major version PGlite runs; anything else is refused before a byte is written.
import fs from "node:fs";
import path from "node:path";
import { LOCK_FILE_NAME } from "./dataDirLock.ts";
import { StoreError } from "./errors.ts";
import { IMAGE_PARTIAL_MARK } from "./pgliteImage.ts";

/** Room a new data dir takes (the image is about 8 MB), on top of the reserve. */
export const NEW_DATA_DIR_BYTES = 16 * 1024 * 1024;

/** The PostgreSQL major version this PGlite runs; a data dir of another one cannot be opened. */
const PG_MAJOR = "18";

/** Missing or empty (a new log goes there), a write of the image cut short (done again), or a database. */
export type DataDirState = "empty" | "partial" | "database";

/**
 * What `dataDir` holds; anything but a PGlite database or what this store writes is refused before
 * a byte is written, so a wrong --data-dir cannot damage what it points at.
 */
export const inspectDataDir = (dataDir: string): DataDirState => {
  let entries: string[];
  try {
    entries = fs.readdirSync(dataDir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return "empty";
    throw new StoreError(
      "refused",
      `cannot use ${dataDir} as a PGlite data dir: ${code === "ENOTDIR" ? "it is not a directory" : (e as Error).message}`,
    );
  }
  const refuse = (reason: string) =>
    new StoreError("refused", `cannot use ${dataDir} as a PGlite data dir: ${reason}; it was left untouched`);
  if (!entries.includes("PG_VERSION")) {
    if (entries.every((f) => f === LOCK_FILE_NAME)) return "empty";
    if (entries.includes(IMAGE_PARTIAL_MARK)) return "partial";
    throw refuse("it holds other files but no PostgreSQL database (no PG_VERSION)");
  }
  let major: string;
  try {
    major = fs.readFileSync(path.join(dataDir, "PG_VERSION"), "utf8").trim();
  } catch (e) {
    throw refuse(`its PG_VERSION cannot be read (${(e as Error).message})`);
  }
  if (major !== PG_MAJOR)
    throw refuse(
      `it holds a PostgreSQL ${JSON.stringify(major.slice(0, 20))} database, and PGlite runs PostgreSQL ${PG_MAJOR}`,
    );
  if (!fs.existsSync(path.join(dataDir, "global", "pg_control")) || !fs.existsSync(path.join(dataDir, "base"))) {
    throw refuse("it is damaged (global/pg_control or base/ is missing)");
  }
  return "database";
};
