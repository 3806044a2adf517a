// Writes a data dir tarball (PGlite's `dumpDataDir` format: ustar, names from the data dir's root) into a
// directory with Node's own fs, or into the in-memory file system of a PGlite being created.
//
// Requirements:
// - A new data dir is written by the OS, not file by file through PGlite's WebAssembly file system:
//   that cost ~190 ms of CPU more than the same image in memory; plain writes of ~300 files cost ~20 ms.
// - An in-memory store gets the image as files that own their bytes (slices of one copy of the tarball):
//   PGlite's own `loadDataDir` (unpack, copy each file, look up each path) cost ~60 ms of CPU more per
//   start (~140 ms measured on PGlite's open alone).
// - PG_VERSION is written last: a dir left half-written by a crash has no PG_VERSION, so it is never
//   opened as a database (the caller's mark file has the write done again).
// - Files are private to the user (0600, directories 0700), as PostgreSQL's initdb makes them.
// - Only regular files and directories, under the target: a name that would leave it is refused.
// - The in-memory files grow by doubling (pgliteFileGrowth.ts).
import fs from "node:fs";
import path from "node:path";
import { MemoryFS } from "@electric-sql/pglite";
import { growFilesGeometrically } from "./pgliteFileGrowth.ts";

const BLOCK = 512;

const field = (header: Uint8Array, offset: number, length: number): string => {
  const bytes = header.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return Buffer.from(end === -1 ? bytes : bytes.subarray(0, end)).toString("utf8");
};

type Entry = { name: string; type: "file" | "dir"; data: Uint8Array };

/** The regular files and directories of a ustar archive, in archive order. */
const tarEntries = (tar: Uint8Array): Entry[] => {
  const entries: Entry[] = [];
  for (let at = 0; at + BLOCK <= tar.length;) {
    const header = tar.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) break;
    const prefix = field(header, 345, 155);
    const name = (prefix ? `${prefix}/` : "") + field(header, 0, 100);
    const size = Number.parseInt(field(header, 124, 12).trim() || "0", 8);
    const flag = String.fromCharCode(header[156] ?? 0);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error(`tar entry ${JSON.stringify(name)} has a bad size`);
    const data = tar.subarray(at + BLOCK, at + BLOCK + size);
    if (flag === "5") entries.push({ name, type: "dir", data });
    else if (flag === "0" || flag === "\0") entries.push({ name, type: "file", data });
    else
      throw new Error(
        `tar entry ${JSON.stringify(name)} is neither a file nor a directory (type ${JSON.stringify(flag)})`,
      );
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return entries;
};

/** An entry's path under the data dir's root (names come with or without a leading "/"); one that leaves it is refused. */
const relativeName = (name: string, dir: string): string => {
  const relative = path.posix.normalize(name.replace(/^\/+/, "")).replace(/\/+$/, "");
  if (relative === ".." || relative.startsWith("../"))
    throw new Error(`tar entry ${JSON.stringify(name)} leaves ${dir}`);
  return relative;
};

/** Writes the archive's files under `dir` (which may exist), PG_VERSION last. */
export const writeTarInto = (tar: Uint8Array, dir: string): void => {
  const root = path.resolve(dir);
  const inside = (name: string): string => path.join(root, relativeName(name, dir));
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  const last: { target: string; data: Uint8Array }[] = [];
  for (const entry of tarEntries(tar)) {
    const target = inside(entry.name);
    if (entry.type === "dir") {
      fs.mkdirSync(target, { recursive: true, mode: 0o700 });
      continue;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    if (path.relative(root, target) === "PG_VERSION") last.push({ target, data: entry.data });
    else fs.writeFileSync(target, entry.data, { mode: 0o600 });
  }
  for (const { target, data } of last) fs.writeFileSync(target, data, { mode: 0o600 });
};

/**
 * PGlite's in-memory file system, holding the data dir of `tar` before PostgreSQL starts (PGlite then
 * finds a database and opens it, as it opens a data dir on disk). Takes `tar` over: the files are its slices.
 */
export class TarMemoryFS extends MemoryFS {
  constructor(private readonly tar: Uint8Array) {
    super();
  }

  override async initialSyncFs(): Promise<void> {
    const mod = this.pg!.Module;
    const root = (mod as unknown as { ENV: Record<string, string | undefined> }).ENV["PGDATA"];
    if (root === undefined) throw new Error("PGlite set no PGDATA before its file system was filled");
    mod.FS.mkdirTree(root);
    // Each directory made once, parents first (a failed mkdir is a thrown error, which costs).
    const made = new Set<string>(["."]);
    const makeDir = (relative: string): void => {
      if (made.has(relative)) return;
      makeDir(path.posix.dirname(relative));
      mod.FS.mkdir(`${root}/${relative}`, 0o700);
      made.add(relative);
    };
    for (const entry of tarEntries(this.tar)) {
      const relative = relativeName(entry.name, "an in-memory data dir");
      if (entry.type === "dir") makeDir(relative);
      else {
        makeDir(path.posix.dirname(relative));
        mod.FS.writeFile(`${root}/${relative}`, entry.data, { canOwn: true });
      }
    }
    growFilesGeometrically(mod.FS, root);
  }
}
