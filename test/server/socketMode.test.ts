// Under a umask of 000 (the worst a user can have): a new data dir is 0700 and the control socket is the owner's
// only from the instant it exists, even in a data dir others may enter.
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createRuntime, scriptedModel, serve, type Runtime } from "../../src/index.ts";
import { acquireDataDirLock } from "../../src/events/dataDirLock.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";

let parent: string;
let rt: Runtime;
let store: FreshPgliteStore;
let umask = 0;

beforeAll(async () => {
  parent = mkdtempSync(path.join(tmpdir(), "az-umask-"));
  store = await freshPgliteStore();
  rt = await createRuntime({ store, model: scriptedModel(() => ({ text: "ok" })) });
});
afterAll(async () => {
  await rt.close();
  await store.close();
  rmSync(parent, { recursive: true, force: true });
});
beforeEach(() => {
  umask = process.umask(0o000);
});
afterEach(() => {
  process.umask(umask);
});

describe("given a process whose umask is 000", () => {
  it("when a data dir is created, then it is 0700", () => {
    const dir = path.join(parent, "nested", "data");
    const lock = acquireDataDirLock(dir);
    try {
      expect((statSync(dir).mode & 0o777).toString(8)).toBe("700");
    } finally {
      lock.release();
    }
  });

  it("when the API listens on a Unix socket in a directory anyone may enter, then the socket is the owner's only as soon as it exists", async () => {
    const dir = mkdtempSync(path.join(parent, "open-"));
    chmodSync(dir, 0o777);
    const socketPath = path.join(dir, "control.sock");
    // serve() alone, without the control socket's chmod after it: what bind() made is what another user could reach.
    const handle = await serve(rt, { socketPath });
    try {
      const mode = statSync(socketPath).mode & 0o777;
      expect(mode & 0o077, `socket mode ${mode.toString(8)}`).toBe(0);
      // The umask is the process's own again afterwards.
      expect(process.umask()).toBe(0);
    } finally {
      await handle.close();
    }
  });
});
