// Fresh PGlite event stores for tests, copied from the one template built per run by globalSetup.ts.
//
// Usage:
//   const store = await freshPgliteStore();                       // on disk, in its own temp dir
//   const store = await freshPgliteStore({ now: () => fixedDate }); // a fixed clock for recorded_at
//   const store = await freshPgliteStore({ inMemory: true });      // no data dir
//   …; await store.close();                                        // also removes the temp dir
// Opening costs ~0.6 s (on disk) to ~1.7 s (in memory) and several hundred MB: share one store
// per test file (beforeAll / afterAll) unless a test needs an empty log.
import { mkdtempSync, rmSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { inject } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { EventStore } from "../../src/events/store.ts";

export type FreshPgliteOptions = { now?: () => Date; inMemory?: boolean };

/** A store on an empty log that has the schema; `dataDir` is where it lives (undefined in memory). */
export type FreshPgliteStore = EventStore & { readonly dataDir: string | undefined };

export const freshPgliteStore = async (options: FreshPgliteOptions = {}): Promise<FreshPgliteStore> => {
  const template = inject("actorzeroPgliteTemplate");
  const now = options.now === undefined ? {} : { now: options.now };
  if (options.inMemory) {
    const loadDataDir = new Blob([await fs.readFile(template.tarball)]);
    return withDataDir(await openPgliteStore({ loadDataDir, ...now }), undefined);
  }
  const dataDir = await copyPgliteTemplate();
  try {
    return withDataDir(await openPgliteStore({ dataDir, ...now }), dataDir);
  } catch (e) {
    await removeDir(dataDir);
    throw e;
  }
};

/** A new temp dir holding a copy of the template data dir (for tests that open the store themselves). */
export const copyPgliteTemplate = async (): Promise<string> => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "actorzero-pglite-"));
  leftovers.add(dataDir);
  await fs.cp(inject("actorzeroPgliteTemplate").dir, dataDir, { recursive: true });
  return dataDir;
};

/** Removes a dir made by copyPgliteTemplate. */
export const removeDir = async (dir: string) => {
  leftovers.delete(dir);
  await fs.rm(dir, { recursive: true, force: true });
};

const withDataDir = (store: EventStore, dataDir: string | undefined): FreshPgliteStore => ({
  sql: store.sql,
  dataDir,
  append: (streamId, events, options) => store.append(streamId, events, options),
  readStream: (streamId, fromVersion) => store.readStream(streamId, fromVersion),
  streamVersion: (streamId) => store.streamVersion(streamId),
  readAll: (after, limit) => store.readAll(after, limit),
  iterateAll: (after, pageSize) => store.iterateAll(after, pageSize),
  headPosition: () => store.headPosition(),
  verify: (options) => store.verify(options),
  subscribe: (after, listener) => store.subscribe(after, listener),
  onAppend: (hook) => store.onAppend(hook),
  close: async () => {
    await store.close();
    if (dataDir !== undefined) await removeDir(dataDir);
  },
});

// Dirs of stores a test forgot to close go when the worker exits.
const leftovers = new Set<string>();
process.once("exit", () => {
  for (const dir of leftovers) rmSync(dir, { recursive: true, force: true });
});
