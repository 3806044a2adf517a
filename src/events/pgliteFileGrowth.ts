// How the files of an in-memory PGlite grow: by doubling, not by an eighth, so appends copy far less.
//
// PGlite keeps an in-memory data dir in Emscripten's MEMFS, where a file is one Uint8Array: a write past
// its end allocates a larger one and copies the file into it. MEMFS grows a file of 1 MB or more by only
// an eighth, so a growing table was copied about eight bytes for each byte appended, into fresh memory
// each time (whose first touch is dear on a virtual machine): in a profile of a 64-leaf fan-out, 5% of
// its CPU went there.
//
// Requirements:
// - A file under GROW_DOUBLING_BELOW doubles (about one byte copied per byte appended); a larger one
//   grows by a quarter, so a large log holds at most a quarter of a file unused.
// - Only the file system of the PGlite it is given, and only when that file system is MEMFS as this
//   PGlite release builds it (a function expandFileStorage on the mount's type); otherwise nothing changes.
// - Contents and size are as before: only the spare capacity differs.

/** Files below this size double when they grow. */
export const GROW_DOUBLING_BELOW = 16 * 1024 * 1024;
const SMALLEST = 8192; // one PostgreSQL page

type MemFile = { contents: Uint8Array; usedBytes: number };
type EmscriptenFs = { lookupPath: (path: string) => { node: { mount?: { type?: { expandFileStorage?: unknown } } } } };

/** The capacity a file of `had` bytes of capacity grows to when `wanted` bytes must fit. */
export const grownCapacity = (had: number, wanted: number): number =>
  Math.max(wanted, SMALLEST, had < GROW_DOUBLING_BELOW ? had * 2 : Math.ceil(had * 1.25));

/**
 * Makes the MEMFS that holds `path` grow its files by grownCapacity. Returns whether it could (false when
 * this PGlite's file system is not the MEMFS it expects).
 */
export const growFilesGeometrically = (fs: unknown, path: string): boolean => {
  const type = (fs as EmscriptenFs).lookupPath(path).node.mount?.type;
  if (type === undefined || typeof type.expandFileStorage !== "function") return false;
  type.expandFileStorage = (file: MemFile, wanted: number): void => {
    const had = file.contents.length;
    if (had >= wanted) return;
    const grown = new Uint8Array(grownCapacity(had, wanted));
    grown.set(file.contents.subarray(0, file.usedBytes));
    file.contents = grown;
  };
  return true;
};
