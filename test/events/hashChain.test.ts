// The hash chain beyond the contract: logs upgraded from older schemas, and many writers on PostgreSQL.
import { describe, expect, it } from "vitest";
import pg from "pg";
import { GENESIS_HASH_SQL, ROW_ENCODING_SQL } from "../../src/events/chainSql.ts";
import { StoreError } from "../../src/events/errors.ts";
import { asRunId } from "../../src/events/ids.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { SCHEMA_VERSION } from "../../src/events/sql.ts";
import type { EventStore } from "../../src/events/store.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const message = (text: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
});

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
        expect(
          (
            await store.sql.query<{ version: number }>(
              "SELECT max(version) AS version FROM actorzero_schema_migrations",
            )
          ).rows[0]!.version,
        ).toBe(SCHEMA_VERSION);
        expect(
          (await store.sql.query<{ after: number }>("SELECT after_position::int AS after FROM actorzero_chain")).rows,
        ).toEqual([{ after: 5 }]);
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

/**
 * A log as schema 5 wrote it: six events of two interleaved streams, each linked to the row before it
 * in the whole log (the chain of schema 2 to 5), no seals, no stream chains.
 */
const BACK_TO_V5 = `SET session_replication_role = replica;
  DROP TABLE actorzero_seals, actorzero_verified, actorzero_stream_chains; DROP FUNCTION actorzero_seal(bigint);
  DELETE FROM actorzero_schema_migrations WHERE version >= 6; INSERT INTO actorzero_schema_migrations (version) VALUES (5);
  INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    SELECT gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END, (g + 1) / 2, 'MessageReceived', 1,
           '{"runId":"run-1","text":"old","sender":"user"}'::jsonb, '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now()
      FROM generate_series(1, 6) AS g;
  DO $$ DECLARE r record; prev bytea := ${GENESIS_HASH_SQL}; BEGIN
    FOR r IN SELECT global_position FROM events ORDER BY global_position LOOP
      UPDATE events e SET hash = sha256(prev || ${ROW_ENCODING_SQL}) WHERE e.global_position = r.global_position RETURNING e.hash INTO prev;
    END LOOP;
  END $$;`;

describe("given a log written with the chain of the whole log (schema 5)", () => {
  it("upgrades it on open: its events keep their links, later ones chain per stream, seals cover both, and its old anchor still proves", async () => {
    const dataDir = await copyPgliteTemplate();
    try {
      const before = await openPgliteStore({ dataDir });
      await before.sql.exec(BACK_TO_V5);
      const oldHead = (
        await before.sql.query<{ hash: string }>(
          "SELECT encode(hash, 'hex') AS hash FROM events WHERE global_position = 6",
        )
      ).rows[0]!.hash;
      await before.close();

      const old = await openPgliteStore({ dataDir, schema: "existing" });
      try {
        expect(await old.verify()).toMatchObject({
          ok: true,
          events: 6,
          head: { position: 6, hash: oldHead },
          unsealed: 0,
        });
      } finally {
        await old.close();
      }
      const store = await openPgliteStore({ dataDir });
      try {
        expect(
          (await store.sql.query<{ after: number }>("SELECT after_position::int AS after FROM actorzero_stream_chains"))
            .rows,
        ).toEqual([{ after: 6 }]);
        await store.append("odd", [message("new odd")], { expectedVersion: 3 });
        await store.append("even", [message("new even")], { expectedVersion: 3 });
        await store.append("fresh", [message("new")], { expectedVersion: "no_stream" });
        const result = await store.verify({ since: { position: 6, hash: oldHead } });
        expect(result.problems).toEqual([]);
        expect(result).toMatchObject({
          ok: true,
          events: 9,
          unchained: 0,
          lastPosition: 9,
          head: { position: 9 },
          unsealed: 0,
        });
      } finally {
        await store.close();
      }
      const edited = await openPgliteStore({ dataDir });
      await edited.sql.exec(`SET session_replication_role = replica;
        UPDATE events SET data = jsonb_set(data, '{text}', '"forged"') WHERE global_position = 3`);
      await edited.close();
      const reader = await openPgliteStore({ dataDir, readOnly: true });
      try {
        expect((await reader.verify()).problems).toContainEqual({
          position: 3,
          problem: expect.stringMatching(/hash does not follow/),
        });
      } finally {
        await reader.close();
      }
    } finally {
      await removeDir(dataDir);
    }
  });
});

/** Opens, appends one event to `stream`, closes (which seals it on PGlite). */
const appendOne = async (open: () => Promise<EventStore>, stream: string) => {
  const store = await open();
  try {
    return (await store.append(stream, [message(stream)], { expectedVersion: "any" })).positions[0]!;
  } finally {
    await store.close();
  }
};

const refusal = (opening: Promise<EventStore>) =>
  opening.then(
    async (s) => (await s.close(), null),
    (e: unknown) => e,
  );

describe("opening a PGlite log for writing", () => {
  it("checks what was added since the last check, refuses a changed log naming the position, and still opens it to read", async () => {
    const dataDir = await copyPgliteTemplate();
    try {
      const open = () => openPgliteStore({ dataDir });
      await appendOne(open, "a");
      const second = await appendOne(open, "b");
      // This open checks the log up to the seal over the second event and records that seal; the third is sealed above it.
      const third = await appendOne(open, "b");
      const raw = await openPgliteStore({ dataDir, readOnly: true });
      await raw.sql.exec(`SET session_replication_role = replica;
        UPDATE events SET data = jsonb_set(data, '{text}', '"forged"') WHERE global_position = ${third}`);
      expect(
        (await raw.sql.query<{ up_to: number }>("SELECT up_to::int AS up_to FROM actorzero_verified")).rows,
      ).toEqual([{ up_to: second }]);
      await raw.close();
      const refused = await refusal(open());
      expect(refused).toBeInstanceOf(StoreError);
      expect(refused).toMatchObject({
        reason: "tampered",
        message: expect.stringMatching(new RegExp(`changed at position ${third}: its hash does not follow`)),
      });
      const reader = await openPgliteStore({ dataDir, readOnly: true });
      try {
        expect((await reader.readStream("b")).length).toBe(2);
        expect((await reader.verify()).problems[0]).toMatchObject({ position: third });
      } finally {
        await reader.close();
      }
    } finally {
      await removeDir(dataDir);
    }
  });
});

describeWithPostgres("opening a PostgreSQL log for writing", () => {
  const db = usePostgresDatabase("actorzero_open_check");

  it("refuses a log changed since the last check with StoreError tampered naming the position, and still opens it to read", async () => {
    const url = await db.fresh();
    const open = () => openPostgresStore({ url, poolSize: 2 });
    const writer = await open();
    const positions: number[] = [];
    for (const stream of ["a", "b", "a"])
      positions.push((await writer.append(stream, [message(stream)], { expectedVersion: "any" })).positions[0]!);
    expect((await writer.verify()).ok).toBe(true);
    await writer.close();
    const later = await open();
    const last = (await later.append("b", [message("later")], { expectedVersion: "any" })).positions[0]!;
    await later.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`SET session_replication_role = replica`);
      await client.query(
        `UPDATE events SET metadata = jsonb_set(metadata, '{actor}', '"someone"') WHERE global_position = ${last}`,
      );
    } finally {
      await client.end();
    }
    const refused = await refusal(open());
    expect(refused).toMatchObject({
      reason: "tampered",
      message: expect.stringMatching(new RegExp(`changed at position ${last}: its hash does not follow`)),
    });
    const reader = await openPostgresStore({ url, readOnly: true });
    try {
      expect(await reader.headPosition()).toBe(last);
    } finally {
      await reader.close();
    }
  });
});

describeWithPostgres("the hash chain with many writers on PostgreSQL", () => {
  const db = usePostgresDatabase("actorzero_chain");

  it("given six processes appending at once to their own and shared streams, every stream chain and the seals verify", async () => {
    const url = await db.fresh();
    const stores: EventStore[] = await Promise.all(
      Array.from({ length: 6 }, () => openPostgresStore({ url, poolSize: 4 })),
    );
    try {
      await Promise.all(
        stores.flatMap((store, w) =>
          Array.from({ length: 4 }, async (_, lane) => {
            for (let i = 0; i < 10; i++) {
              const stream = i % 3 === 0 ? "shared" : `w${w}-${lane}`;
              await store.append(
                stream,
                i % 2 === 0
                  ? [message(`${w}.${lane}.${i}`)]
                  : [message(`${w}.${lane}.${i}a`), message(`${w}.${lane}.${i}b`)],
                {
                  expectedVersion: "any",
                },
              );
            }
          }),
        ),
      );
      const result = await stores[0]!.verify();
      expect(result.problems).toEqual([]);
      expect(result.events).toBe(6 * 4 * (5 * 1 + 5 * 2));
      // No gap: appends to one stream wait for each other (its lock), so none takes a position it does not keep.
      expect(result.lastPosition).toBe(result.events);
      // verify seals first what has settled: every append here has committed.
      expect(result.head.position).toBe(result.events);
      expect(result.unsealed).toBe(0);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
