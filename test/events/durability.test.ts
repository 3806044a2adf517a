// PGlite on disk: what an append acknowledged survives SIGKILL, and a data dir belongs to one process.
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LOCK_FILE_NAME } from "../../src/events/dataDirLock.ts";
import { StoreError } from "../../src/events/errors.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { startStoreChild } from "./childProcess.ts";

const dirs: string[] = [];
const dataDir = async () => {
  const dir = await copyPgliteTemplate();
  dirs.push(dir);
  return dir;
};
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

describe("when the process appending to a data dir is killed with SIGKILL", () => {
  it("reopens the data dir (taking over the dead process's lock) with every acknowledged event", async () => {
    const dir = await dataDir();
    const child = startStoreChild("append", dir);
    await child.waitFor((line) => line.startsWith("ack 60 "));
    child.process.kill("SIGKILL");
    expect(await child.exited).toMatchObject({ signal: "SIGKILL" });

    const acked = child.lines.filter((l) => l.startsWith("ack ")).map((l) => l.split(" ").map(Number));
    expect(acked.length).toBeGreaterThanOrEqual(60);
    // The killed process could not release its lock.
    expect(JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILE_NAME), "utf8"))).toMatchObject({
      pid: child.process.pid,
    });

    const store = await openPgliteStore({ dataDir: dir });
    try {
      const events = await store.readStream("ctx-durable");
      const stored = new Map(events.map((e) => [e.streamVersion, e.globalPosition]));
      for (const [, version, position] of acked) expect(stored.get(version!)).toBe(position);
      expect(events.map((e) => e.streamVersion)).toEqual(events.map((_, i) => i + 1));
      // Writable again, on top of what survived.
      await store.append("ctx-durable", [{ type: "RunInterrupted", data: { runId: "run-1" } } as never], {
        expectedVersion: events.length,
      });
    } finally {
      await store.close();
    }
    expect(fs.existsSync(path.join(dir, LOCK_FILE_NAME))).toBe(false);
  });
});

describe("when a second process opens a data dir that a live process holds", () => {
  it("fails with StoreError locked naming the holder, and leaves the data dir unharmed", async () => {
    const dir = await dataDir();
    const holder = startStoreChild("hold", dir);
    const ready = await holder.waitFor((line) => line.startsWith("ready "));
    const holderPid = Number(ready.split(" ")[1]);

    const error = await openPgliteStore({ dataDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ reason: "locked" });
    expect((error as Error).message).toContain(`data dir ${dir} is in use by process ${holderPid}`);

    // The holder goes on writing, then closes and releases the lock.
    holder.process.stdin!.end("close\n");
    await holder.waitFor((line) => line === "closed");
    expect(await holder.exited).toMatchObject({ code: 0 });
    expect(fs.existsSync(path.join(dir, LOCK_FILE_NAME))).toBe(false);

    const store = await openPgliteStore({ dataDir: dir });
    try {
      const events = await store.readStream("ctx-held");
      expect(events.map((e) => (e.type === "MessageReceived" ? e.data.text : e.type))).toEqual([
        "h1",
        "h2",
        "h3",
        "h4",
      ]);
    } finally {
      await store.close();
    }
  });

  it("refuses a second open of the same data dir within one process too", async () => {
    const dir = await dataDir();
    const first = await openPgliteStore({ dataDir: dir });
    try {
      await expect(openPgliteStore({ dataDir: dir })).rejects.toMatchObject({
        reason: "locked",
        message: expect.stringContaining(`in use by process ${process.pid}`),
      });
    } finally {
      await first.close();
    }
  });
});
