// Who hears an append: LISTENers of a PostgreSQL log on each commit, nobody on PGlite (one process holds it),
// and a log of schema version 4, whose INSERT trigger notified, upgraded without it.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { asRunId } from "../../src/events/ids.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { NOTIFY_CHANNEL, NOTIFY_SETTING, SCHEMA_VERSION } from "../../src/events/sql.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const message = (text: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
});
const EVENTS_JSON = (text: string) =>
  JSON.stringify([
    {
      event_id: crypto.randomUUID(),
      type: "MessageReceived",
      schema_version: 1,
      data: { runId: "run-1", text, sender: "user" },
      metadata: { correlationId: null, causationId: null, actor: null },
    },
  ]);

/** Schema version 4's INSERT trigger, as that version created it. */
const V4_TRIGGER = `
CREATE OR REPLACE FUNCTION actorzero_before_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_current_xact_id();
  PERFORM pg_notify('${NOTIFY_CHANNEL}', '');
  RETURN NULL;
END
$fn$;
CREATE TRIGGER actorzero_events_before_insert BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION actorzero_before_insert();`;

const insertTriggers = (store: { sql: { query: <R>(sql: string) => Promise<{ rows: R[] }> } }) =>
  store.sql.query<{ name: string }>(
    `SELECT tgname AS name FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal AND (tgtype & 4) <> 0`,
  );

describe("given a PGlite log of schema version 4, whose INSERT trigger notified", () => {
  it("opening it drops the trigger and its function; appends chain and verify as before, and PGlite's appends are set not to notify", async () => {
    const dataDir = await copyPgliteTemplate();
    try {
      const before = await openPgliteStore({ dataDir });
      await before.append("old", [message("before the upgrade")], { expectedVersion: "no_stream" });
      await before.sql.exec(`${V4_TRIGGER} DELETE FROM actorzero_schema_migrations WHERE version > 4;`);
      expect((await insertTriggers(before)).rows).toEqual([{ name: "actorzero_events_before_insert" }]);
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
        expect((await insertTriggers(store)).rows).toEqual([]);
        expect((await store.sql.query("SELECT 1 FROM pg_proc WHERE proname = 'actorzero_before_insert'")).rows).toEqual(
          [],
        );
        expect(
          (await store.sql.query<{ v: string }>(`SELECT current_setting('${NOTIFY_SETTING}', true) AS v`)).rows[0]!.v,
        ).toBe("off");
        await store.append("old", [message("after the upgrade")], { expectedVersion: 1 });
        const result = await store.verify();
        expect(result).toMatchObject({ ok: true, events: 2, head: { position: 2 } });
      } finally {
        await store.close();
      }
    } finally {
      await removeDir(dataDir);
    }
  });
});

describeWithPostgres("appends on PostgreSQL and the processes that LISTEN", () => {
  const db = usePostgresDatabase("actorzero_notify");

  it("each committed append notifies once; one sent with notifications off does not, and a conflicting one does not", async () => {
    const url = await db.fresh();
    const store = await openPostgresStore({ url });
    const listener = new pg.Client({ connectionString: url });
    const writer = new pg.Client({ connectionString: url });
    await Promise.all([listener.connect(), writer.connect()]);
    try {
      expect((await insertTriggers(store)).rows).toEqual([]);
      const heard: string[] = [];
      let woke: () => void = () => {};
      listener.on("notification", (n) => (heard.push(n.channel), woke()));
      await listener.query(`LISTEN ${NOTIFY_CHANNEL}`);
      const append = (expected: number, text: string) =>
        writer.query("SELECT actorzero_append($1, $2, $3::jsonb, now()) AS result", ["s", expected, EVENTS_JSON(text)]);

      await writer.query(`SET ${NOTIFY_SETTING} = off`);
      await append(-1, "unheard");
      await writer.query(`RESET ${NOTIFY_SETTING}`);
      expect((await append(5, "a conflict")).rows[0].result).toEqual({ conflict: true, version: 1 });
      const first = new Promise<void>((resolve) => (woke = resolve));
      await append(1, "heard");
      await first;
      // A notification is delivered before the answer to a later query on the same connection.
      await listener.query("SELECT 1");
      expect(heard).toEqual([NOTIFY_CHANNEL]);

      // The store's own appends wake a subscriber of another store on the same log.
      const other = await openPostgresStore({ url });
      try {
        const seen = new Promise<string>((resolve) => other.subscribe(2, (e) => resolve(e.type)));
        await store.append("s", [message("from the store")], { expectedVersion: 2 });
        expect(await seen).toBe("MessageReceived");
      } finally {
        await other.close();
      }
    } finally {
      await Promise.all([listener.end(), writer.end(), store.close()]);
    }
  });
});
