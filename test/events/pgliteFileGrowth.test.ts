// An in-memory store's files grow by doubling: a growing events table is copied a few times, not at every eighth.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GROW_DOUBLING_BELOW, grownCapacity } from "../../src/events/pgliteFileGrowth.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { asRunId } from "../../src/events/ids.ts";

type MemFile = { contents: Uint8Array; usedBytes: number };
type PgliteInside = {
  db: {
    mod: { FS: { lookupPath: (p: string) => { node: MemFile } } };
    query: (sql: string) => Promise<{ rows: { path: string; root: string }[] }>;
  };
};

describe("grownCapacity", () => {
  it("doubles a file below the threshold, adds a quarter above it, and always fits what is wanted", () => {
    expect(grownCapacity(1 << 20, (1 << 20) + 1)).toBe(2 << 20);
    expect(grownCapacity(GROW_DOUBLING_BELOW, GROW_DOUBLING_BELOW + 1)).toBe(GROW_DOUBLING_BELOW * 1.25);
    expect(grownCapacity(1000, 50_000)).toBe(50_000);
    expect(grownCapacity(0, 10)).toBe(8192);
  });
});

describe("an in-memory store whose events table grows from under 1 MB to over 4 MB", () => {
  it("moves the table's file to a larger buffer about once per doubling, and the log verifies", async () => {
    const store = await openPgliteStore();
    try {
      const { db } = store as unknown as PgliteInside;
      const { rows } = await db.query(
        `SELECT pg_relation_filepath('events') AS path, current_setting('data_directory') AS root`,
      );
      const file = () => db.mod.FS.lookupPath(`${rows[0]!.root}/${rows[0]!.path}`).node;
      const text = "x".repeat(2000);
      const event = (i: number): NewEvent => ({
        type: "RunCompleted",
        data: { runId: asRunId(`run-${i}`), response: `${i} ${text}` },
      });
      // Counted from 1 MB, where MEMFS's own growth falls to an eighth: it moved the file about 12 times up to 4 MB.
      let buffers = 0;
      let seen: Uint8Array | undefined;
      for (let i = 0; file().usedBytes < 4 << 20; i++) {
        await store.append(
          randomUUID(),
          Array.from({ length: 25 }, (_, k) => event(i * 25 + k)),
          { expectedVersion: "no_stream" },
        );
        if (file().usedBytes < 1 << 20) continue;
        if (seen !== undefined && file().contents !== seen) buffers++;
        seen = file().contents;
      }
      expect(buffers).toBeLessThanOrEqual(3); // 1 → 2 → 4 MB, and one more for where 1 MB fell
      const verified = await store.verify();
      expect(verified.problems).toEqual([]);
      expect(verified.events).toBeGreaterThan(1500);
    } finally {
      await store.close();
    }
  });
});
