// The embedded store as it was when the audit issue was filed, loaded from this repository's history, so
// a bench can set today's append rate beside it in one process.
//
// The cost bar ("append rate within 10% of today") speaks of the append rate users had then: the
// store's own `append`, whatever changed around the append function since. Its source is taken with
// `git archive` into a temporary directory that borrows this checkout's node_modules; without git or
// without that commit (a packed tarball, a shallow clone) the comparison is skipped, and says so.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { EventStore } from "../../src/events/store.ts";

/** The commit the audit issue was probed on (main when it was filed). */
export const FILED_AT = "15bf0be";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export type FiledStore = { open: () => Promise<EventStore>; dispose: () => void };

/** The store module at FILED_AT, or why it cannot be had here. */
export const loadFiledStore = async (): Promise<FiledStore | { unavailable: string }> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-filed-"));
  const dispose = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    const tar = execFileSync("git", ["-C", repoRoot, "archive", FILED_AT, "src", "package.json"], {
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
    });
    execFileSync("tar", ["-x", "-C", dir], { input: tar });
  } catch (e) {
    dispose();
    return {
      unavailable: `commit ${FILED_AT} is not in this checkout's history (${(e as Error).message.split("\n")[0]})`,
    };
  }
  fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(dir, "node_modules"), "dir");
  const module = (await import(path.join(dir, "src/events/pgliteStore.ts"))) as {
    openPgliteStore: (o?: object) => Promise<EventStore>;
  };
  return { open: () => module.openPgliteStore(), dispose };
};
