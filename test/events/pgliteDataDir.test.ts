// A data dir that is not an event log we can open is refused with a StoreError naming it and why, and left as it was.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { StoreError } from "../../src/events/errors.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { IMAGE_PARTIAL_MARK } from "../../src/events/pgliteImage.ts";
import { writeTarInto } from "../../src/events/pgliteTar.ts";
import { asRunId } from "../../src/events/ids.ts";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await removeDir(d);
});

const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-foreign-"));
  dirs.push(d);
  return d;
};

/** Every file under dir with its bytes, to compare before and after. */
const snapshot = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, file)] = fs.readFileSync(file).toString("base64");
  }
  return out;
};

/** `sameBytes: false` where PostgreSQL had to open the dir to see why (its shutdown checkpoint writes). */
const expectRefused = async (dir: string, reason: RegExp, sameBytes = true) => {
  const before = snapshot(dir);
  const error = await openPgliteStore({ dataDir: dir }).then(
    async (s) => {
      await s.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).reason).toBe("refused");
  expect((error as Error).message).toContain(dir);
  expect((error as Error).message).toMatch(reason);
  if (sameBytes) expect(snapshot(dir)).toEqual(before);
};

describe("given a data dir that is not an event log", () => {
  it("refuses a dir of other files and leaves them untouched", async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "notes.txt"), "my notes");
    await expectRefused(dir, /no PostgreSQL database/);
  });

  it("refuses a database of another PostgreSQL major version", async () => {
    const dir = await copyPgliteTemplate();
    fs.writeFileSync(path.join(dir, "PG_VERSION"), "15\n");
    await expectRefused(dir, /PostgreSQL "15" database/);
  });

  it("refuses a damaged database whose control file is gone", async () => {
    const dir = await copyPgliteTemplate();
    fs.rmSync(path.join(dir, "global", "pg_control"));
    await expectRefused(dir, /damaged/);
  });

  it("refuses a log whose schema is newer than this runtime knows", async () => {
    const dir = await copyPgliteTemplate();
    const store = await openPgliteStore({ dataDir: dir });
    await store.sql.exec("INSERT INTO actorzero_schema_migrations (version) VALUES (999)");
    await store.close();
    await expectRefused(dir, /schema .* is at version 999, newer/, false);
    // Nothing of the newer schema was rewritten: its version is still there.
    fs.rmSync(path.join(dir, "actorzero.lock"), { force: true });
    const { PGlite } = await import("@electric-sql/pglite");
    const db = await PGlite.create({ dataDir: dir });
    const { rows } = await db.query<{ version: number }>(
      "SELECT max(version) AS version FROM actorzero_schema_migrations",
    );
    await db.close();
    expect(rows[0]?.version).toBe(999);
  });
});

describe("given an empty or missing data dir", () => {
  it("creates the event log there from the prepared image", async () => {
    const dir = path.join(tempDir(), "new");
    const store = await openPgliteStore({ dataDir: dir });
    try {
      const { rows } = await store.sql.query<{ version: number }>(
        "SELECT max(version) AS version FROM actorzero_schema_migrations",
      );
      expect(rows[0]?.version).toBeGreaterThanOrEqual(1);
      expect(await store.headPosition()).toBe(0);
    } finally {
      await store.close();
    }
    expect(fs.existsSync(path.join(dir, "PG_VERSION"))).toBe(true);
  });
});

describe("when writing the image into a new data dir was cut short", () => {
  it("writes it again on the next open and opens the log", async () => {
    const dir = path.join(tempDir(), "new");
    // What a process killed mid-write leaves: the mark, some of the files, no PG_VERSION.
    fs.mkdirSync(path.join(dir, "base", "5"), { recursive: true });
    fs.writeFileSync(path.join(dir, IMAGE_PARTIAL_MARK), "");
    fs.writeFileSync(path.join(dir, "base", "5", "leftover"), "half a file");
    const store = await openPgliteStore({ dataDir: dir });
    try {
      expect(await store.headPosition()).toBe(0);
    } finally {
      await store.close();
    }
    expect(fs.existsSync(path.join(dir, IMAGE_PARTIAL_MARK))).toBe(false);
    expect(fs.existsSync(path.join(dir, "base", "5", "leftover"))).toBe(false);
  });

  it("still refuses a dir of other files that has no such mark", async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, "base"));
    fs.writeFileSync(path.join(dir, "base", "notes.txt"), "my notes");
    await expectRefused(dir, /no PostgreSQL database/);
  });
});

describe("given a tarball with a name that leaves the target dir", () => {
  it("refuses it and writes nothing outside", () => {
    const parent = tempDir();
    const header = new Uint8Array(512);
    header.set(new TextEncoder().encode("../escaped"), 0);
    header.set(new TextEncoder().encode("00000000001\0"), 124);
    header[156] = "0".charCodeAt(0);
    const tar = new Uint8Array(512 * 4);
    tar.set(header, 0);
    tar.set(new TextEncoder().encode("x"), 512);
    expect(() => writeTarInto(tar, path.join(parent, "target"))).toThrow(/leaves/);
    expect(fs.existsSync(path.join(parent, "escaped"))).toBe(false);
  });
});

describe("given no data dir", () => {
  it("starts each in-memory store from the image on its own copy: what one writes, the next does not see", async () => {
    const first = await openPgliteStore();
    try {
      await first.append(
        "s-1",
        [
          {
            type: "MessageReceived",
            data: { runId: asRunId("r-1"), text: "hello", sender: "user" },
            metadata: { correlationId: "r-1", causationId: null, actor: "test" },
          },
        ],
        { expectedVersion: "no_stream" },
      );
      // A row on a page the image already has: PostgreSQL writes that file in place.
      await first.sql.exec("INSERT INTO actorzero_schema_migrations (version) VALUES (-1); CHECKPOINT");
      expect(await first.headPosition()).toBe(1);
    } finally {
      await first.close();
    }
    const second = await openPgliteStore();
    try {
      expect(await second.headPosition()).toBe(0);
      const { rows } = await second.sql.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM actorzero_schema_migrations WHERE version = -1",
      );
      expect(rows[0]?.n).toBe(0);
    } finally {
      await second.close();
    }
  });
});
