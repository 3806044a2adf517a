// Writes a data dir tarball (PGlite's `dumpDataDir` format: ustar, names from the data dir's root) into a directory with Node's own fs.
//
// Requirements:
// - A new data dir is written by the OS, not file by file through PGlite's WebAssembly file system:
//   that cost ~190 ms of CPU more than the same image in memory; plain writes of ~300 files cost ~20 ms.
// - PG_VERSION is written last: a dir left half-written by a crash has no PG_VERSION, so the store
//   refuses it as not a database instead of opening a damaged one.
// - Files are private to the user (0600, directories 0700), as PostgreSQL's initdb makes them.
// - Only regular files and directories, under the target: a name that would leave it is refused.
import fs from "node:fs";
import path from "node:path";

const BLOCK = 512;

const field = (header: Uint8Array, offset: number, length: number): string => {
  const bytes = header.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return Buffer.from(end === -1 ? bytes : bytes.subarray(0, end)).toString("utf8");
};

type Entry = { name: string; type: "file" | "dir"; data: Uint8Array };

/** The regular files and directories of a ustar archive, in archive order. */
export const tarEntries = (tar: Uint8Array): Entry[] => {
  const entries: Entry[] = [];
  for (let at = 0; at + BLOCK <= tar.length; ) {
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
    else throw new Error(`tar entry ${JSON.stringify(name)} is neither a file nor a directory (type ${JSON.stringify(flag)})`);
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return entries;
};

/** Writes the archive's files under `dir` (which may exist), PG_VERSION last. */
export const writeTarInto = (tar: Uint8Array, dir: string): void => {
  const root = path.resolve(dir);
  // Names are relative to the data dir's root, with or without a leading "/".
  const inside = (name: string): string => {
    const relative = path.posix.normalize(name.replace(/^\/+/, ""));
    if (relative === ".." || relative.startsWith("../")) throw new Error(`tar entry ${JSON.stringify(name)} leaves ${dir}`);
    return path.join(root, relative);
  };
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
