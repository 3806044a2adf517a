// One fresh PGlite store shared by the tests of a file: opened before them, closed after them (opening one costs
// ~0.6 s and several hundred MB, so a file opens one unless a test needs an empty log).
//
// Usage:
//   let store: EventStore;
//   storeForFile((s) => (store = s));
import { afterAll, beforeAll } from "vitest";
import { freshPgliteStore, type FreshPgliteStore } from "./pglite.ts";

export const storeForFile = (set: (store: FreshPgliteStore) => void): void => {
  let opened: FreshPgliteStore | undefined;
  beforeAll(async () => {
    opened = await freshPgliteStore();
    set(opened);
  });
  afterAll(async () => {
    await opened?.close();
  });
};
