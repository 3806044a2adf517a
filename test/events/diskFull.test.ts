// A full disk is an error, never a hang, on a real small file system: a tmpfs this test mounts (it needs root,
// as CI runs; otherwise it is skipped and says why). The disk is filled past the store's reserve, the append's
// StoreError `disk_full` is awaited (a hang would end in vitest's timeout), space is freed, appends go on, and a
// reopened log holds every acknowledged event.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { StoreError } from "../../src/events/errors.ts";
import { freeBytes, RESERVE_BYTES } from "../../src/events/diskReserve.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { asRunId } from "../../src/events/ids.ts";
import { createRuntime, scriptedModel } from "../../src/index.ts";

const SIZE_MB = 128;
const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-small-disk-"));

/** Mounts the tmpfs, or says why it cannot. */
const mount = (): string | null => {
  if (process.getuid?.() !== 0) return "it needs root to mount a tmpfs";
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${SIZE_MB}M`, "tmpfs", mountPoint], { stdio: "pipe" });
    return null;
  } catch (e) {
    return `mounting a tmpfs failed: ${(e as Error).message.split("\n")[0]}`;
  }
};
const notMounted = mount();
if (notMounted !== null) console.warn(`test/events/diskFull.test.ts skipped: ${notMounted}`);

afterAll(() => {
  if (notMounted === null) execFileSync("umount", [mountPoint]);
  fs.rmSync(mountPoint, { recursive: true, force: true });
});

const filler = path.join(mountPoint, "filler");

/** Writes a file that leaves `leave` bytes free on the tmpfs (or as near as its pages allow). */
const fillLeaving = (leave: number) => {
  fs.rmSync(filler, { force: true });
  const fd = fs.openSync(filler, "w");
  const chunk = Buffer.alloc(1024 * 1024, 1);
  try {
    for (let left = freeBytes(mountPoint) - leave; left > 0; left -= chunk.length)
      fs.writeSync(fd, chunk, 0, Math.min(left, chunk.length));
  } finally {
    fs.closeSync(fd);
  }
};

const text = "disk ".repeat(400);
const event = (i: number): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId(`run-${i}`), text, sender: "user" },
  metadata: { correlationId: `run-${i}`, causationId: null, actor: "test" },
});

const reasonOf = (p: Promise<unknown>) =>
  p.then(
    () => "succeeded",
    (e) => (e instanceof StoreError ? e.reason : `not a StoreError: ${String(e)}`),
  );

describe.skipIf(notMounted !== null)(`given a store on a ${SIZE_MB} MB tmpfs`, () => {
  it("when the disk fills, then appends fail with disk_full, reads answer, appends go on once space is freed, and nothing acknowledged is lost", async () => {
    const dataDir = path.join(mountPoint, "log");
    let store: EventStore = await openPgliteStore({ dataDir });
    const acknowledged: string[] = [];
    let version = 0;
    const append = async (i: number) => {
      const events = Array.from({ length: 5 }, (_, k) => event(i * 5 + k));
      const result = await store.append("disk-stream", events, {
        expectedVersion: version === 0 ? "no_stream" : version,
      });
      version = result.nextExpectedVersion;
      acknowledged.push(...result.events.map((e) => e.eventId));
    };
    try {
      fillLeaving(RESERVE_BYTES + 4 * 1024 * 1024);
      let refused: unknown = null;
      for (let i = 0; i < 5000 && refused === null; i++) await append(i).catch((e) => (refused = e));
      expect(refused).toBeInstanceOf(StoreError);
      expect((refused as StoreError).reason).toBe("disk_full");
      expect((refused as StoreError).message).toMatch(/full.*free some space/);
      expect(acknowledged.length).toBeGreaterThan(0);

      // Still responsive: reads answer, and another append is refused the same way, not hung.
      expect((await store.readAll(0, 1))[0]?.eventId).toBe(acknowledged[0]);
      expect(await reasonOf(append(9000))).toBe("disk_full");

      fs.rmSync(filler);
      await append(9001);
      await store.close();

      // Opening on a full disk is refused as clearly, an existing log and a new one alike.
      fillLeaving(256 * 1024);
      expect(await reasonOf(openPgliteStore({ dataDir }))).toBe("disk_full");
      expect(await reasonOf(openPgliteStore({ dataDir: path.join(mountPoint, "new-log") }))).toBe("disk_full");
      fs.rmSync(filler);

      store = await openPgliteStore({ dataDir });
      const stored = (await store.readStream("disk-stream")).map((e) => e.eventId);
      expect(stored).toEqual(acknowledged);
    } finally {
      fs.rmSync(filler, { force: true });
      await store.close();
    }
  });

  it("when a runtime's disk fills, then creating a context or finishing a run fails with disk_full, the runtime still answers, and works once space is freed", async () => {
    const store = await openPgliteStore({ dataDir: path.join(mountPoint, "runtime-log") });
    // The first model call fills the disk, as another program might while a run waits on its model.
    let calls = 0;
    const model = scriptedModel(() => {
      if (++calls === 1) fillLeaving(256 * 1024);
      return { text: "done" };
    });
    const rt = await createRuntime({ store, model, limits: { retryBaseMs: 1, retryMaxMs: 5 } });
    try {
      const first = await rt.createContext({ name: "before" });
      const cut = await rt.send(first.id, "go");
      expect(cut.status).toBe("failed");
      expect(cut.failure?.message).toMatch(/disk .* is full/);
      // Filled to its last pages: the store's own writes stop at the reserve, PGlite never sees ENOSPC.
      expect(await reasonOf(rt.createContext({ name: "while full" }))).toBe("disk_full");
      expect((await rt.contexts()).map((c) => c.id)).toEqual([first.id]);
      fs.rmSync(filler);
      const after = await rt.createContext({ name: "after" });
      expect((await rt.send(after.id, "go")).status).toBe("completed");
      expect((await rt.send(first.id, "again")).status).toBe("completed");
      expect((await rt.contexts()).map((c) => c.id).sort()).toEqual([first.id, after.id].sort());
    } finally {
      fs.rmSync(filler, { force: true });
      await rt.close();
      await store.close();
    }
  });
});
