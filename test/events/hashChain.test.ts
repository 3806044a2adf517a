// The hash chain beyond the contract: a log upgraded from the unchained schema, and many writers on PostgreSQL.
import { describe, expect, it } from "vitest";
import { asRunId } from "../../src/events/ids.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { SCHEMA_VERSION } from "../../src/events/sql.ts";
import type { EventStore } from "../../src/events/store.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const message = (text: string): NewEvent => ({ type: "MessageReceived", data: { runId: asRunId("run-1"), text, sender: "user" } });

const INSERT_V1 = `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT gen_random_uuid(), 'old', g, 'MessageReceived', 1, '{"runId":"run-1","text":"old","sender":"user"}'::jsonb,
         '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now()
    FROM generate_series(1, 5) AS g`;

describe("given a log written before the hash chain (schema version 1)", () => {
  it("upgrades it on open: the chain starts after the old events, recorded as such, and verify passes", async () => {
    const dataDir = await copyPgliteTemplate();
    try {
      // Turn the new log back into a version 1 log holding five unchained events.
      const before = await openPgliteStore({ dataDir });
      await before.sql.exec(`SET session_replication_role = replica;
        ALTER TABLE events DROP COLUMN hash; DROP TABLE actorzero_chain;
        DELETE FROM actorzero_schema_migrations WHERE version >= 2; ${INSERT_V1};`);
      await before.close();

      const store = await openPgliteStore({ dataDir });
      try {
        expect((await store.sql.query<{ version: number }>("SELECT max(version) AS version FROM actorzero_schema_migrations")).rows[0]!.version).toBe(SCHEMA_VERSION);
        expect((await store.sql.query<{ after: number }>("SELECT after_position::int AS after FROM actorzero_chain")).rows).toEqual([{ after: 5 }]);
        const { positions } = await store.append("new", [message("a"), message("b")], { expectedVersion: "no_stream" });
        expect(positions).toEqual([6, 7]);
        const result = await store.verify();
        expect(result).toMatchObject({ ok: true, events: 7, chainAfter: 5, unchained: 5, head: { position: 7 } });
        expect(result.head.hash).toMatch(/^[0-9a-f]{64}$/);
      } finally {
        await store.close();
      }
    } finally {
      await removeDir(dataDir);
    }
  });
});

describeWithPostgres("the hash chain with many writers on PostgreSQL", () => {
  const db = usePostgresDatabase("actorzero_chain");

  it("given six processes appending at once to their own and shared streams, the chain follows commit order and verifies", async () => {
    const url = await db.fresh();
    const stores: EventStore[] = await Promise.all(Array.from({ length: 6 }, () => openPostgresStore({ url, poolSize: 4 })));
    try {
      await Promise.all(
        stores.flatMap((store, w) =>
          Array.from({ length: 4 }, async (_, lane) => {
            for (let i = 0; i < 10; i++) {
              const stream = i % 3 === 0 ? "shared" : `w${w}-${lane}`;
              await store.append(stream, i % 2 === 0 ? [message(`${w}.${lane}.${i}`)] : [message(`${w}.${lane}.${i}a`), message(`${w}.${lane}.${i}b`)], {
                expectedVersion: "any",
              });
            }
          }),
        ),
      );
      const result = await stores[0]!.verify();
      expect(result.problems).toEqual([]);
      expect(result.events).toBe(6 * 4 * (5 * 1 + 5 * 2));
      // No gap: with the chain lock held from position to commit, no append took a position it did not keep.
      expect(result.head.position).toBe(result.events);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
