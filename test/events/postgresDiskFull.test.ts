// The PostgreSQL store on a full disk: the server's own disk-full error (SQLSTATE 53100) reaches the caller as
// StoreError `disk_full`, and the log goes on once space is freed. The log's table is moved to a tablespace on a
// small tmpfs this test mounts (it needs root and the local throwaway cluster; otherwise it is skipped and says why).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { expect, it } from "vitest";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { StoreError } from "../../src/events/errors.ts";
import { freeBytes } from "../../src/events/diskReserve.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { asRunId } from "../../src/events/ids.ts";
import { dropDatabase } from "../../bench/support/pgCluster.ts";
import { describeWithPostgres, postgresAdminUrl, usePostgresDatabase } from "../support/postgres.ts";

const whyNot =
  process.getuid?.() !== 0
    ? "it needs root to mount a tmpfs"
    : process.env.ACTORZERO_PG_URL
      ? "the server is ACTORZERO_PG_URL's, whose disk this test cannot reach"
      : null;
if (whyNot !== null) console.warn(`test/events/postgresDiskFull.test.ts skipped: ${whyNot}`);

const admin = async (sql: string) => {
  const client = new pg.Client({ connectionString: postgresAdminUrl! });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
};

const event = (i: number): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId(`run-${i}`), text: "full ".repeat(400), sender: "user" },
  metadata: { correlationId: `run-${i}`, causationId: null, actor: "test" },
});

describeWithPostgres("PostgreSQL on a full disk", () => {
  const db = usePostgresDatabase("actorzero_disk");

  it.skipIf(whyNot !== null)(
    "when the server's disk fills, then an append fails with disk_full, and goes through once space is freed",
    async () => {
      const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-pg-small-disk-"));
      const tablespace = `actorzero_small_${process.pid}`;
      const filler = path.join(mountPoint, "filler");
      const url = await db.fresh();
      let store: EventStore | undefined;
      let mounted = false;
      let created = false;
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", "size=16M,mode=755", "tmpfs", mountPoint]);
        mounted = true;
        const spaceDir = path.join(mountPoint, "space");
        fs.mkdirSync(spaceDir, { mode: 0o700 });
        execFileSync("chown", ["postgres:postgres", spaceDir]);
        await admin(`CREATE TABLESPACE ${tablespace} LOCATION '${spaceDir}'`);
        created = true;
        store = await openPostgresStore({ url });
        await store.sql.exec(`ALTER TABLE events SET TABLESPACE ${tablespace}`);
        const chunk = Buffer.alloc(1024 * 1024, 1);
        fs.writeFileSync(filler, Buffer.alloc(0));
        while (freeBytes(mountPoint) > 2 * chunk.length) fs.appendFileSync(filler, chunk);

        const acknowledged: string[] = [];
        let version = 0;
        const append = async (i: number) => {
          const result = await store!.append(
            "pg-disk",
            Array.from({ length: 5 }, (_, k) => event(i * 5 + k)),
            { expectedVersion: version === 0 ? "no_stream" : version },
          );
          version = result.nextExpectedVersion;
          acknowledged.push(...result.events.map((e) => e.eventId));
        };
        let refused: unknown = null;
        for (let i = 0; i < 5000 && refused === null; i++) await append(i).catch((e) => (refused = e));
        expect(refused).toBeInstanceOf(StoreError);
        expect((refused as StoreError).reason).toBe("disk_full");
        expect(acknowledged.length).toBeGreaterThan(0);

        fs.rmSync(filler);
        await append(9000);
        expect((await store.readStream("pg-disk")).map((e) => e.eventId)).toEqual(acknowledged);
      } finally {
        await store?.close();
        await dropDatabase(url);
        if (created) await admin(`DROP TABLESPACE ${tablespace}`);
        if (mounted) execFileSync("umount", [mountPoint]);
        fs.rmSync(mountPoint, { recursive: true, force: true });
      }
    },
  );
});
