// Projections on a PostgreSQL log with concurrent writers: an append that commits after a later position must still be projected.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { encodeEvent } from "../../src/events/codec.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { openProjections } from "../../src/projections/engine.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { rootCreated } from "../support/rootCreated.ts";

describeWithPostgres("projections over a log that many processes append to", () => {
  const db = usePostgresDatabase("actorzero_out_of_order");

  // Appends to different contexts commit in any order; so does a row inserted around the append
  // function (a foreign or old writer), the case this test holds open.
  describe("when an insert holding an earlier position commits after a later append, with a catch-up in between", () => {
    // Catch-up reads only up to the settled position (store.settledPosition): while the earlier append
    // is in flight its checkpoint stays below the later one, and once it commits both are projected.
    it("projects the earlier append too", async () => {
      const url = await db.fresh();
      const store = await openPostgresStore({ url });
      const projections = await openProjections(store);
      const slow = randomUUID();
      const fast = randomUUID();
      const writer = new pg.Client({ connectionString: url });
      await writer.connect();
      try {
        // The slow writer takes the first position and holds its transaction open.
        const e = encodeEvent(rootCreated(slow));
        await writer.query("BEGIN");
        await writer.query(
          `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
           VALUES ($1, $2, 1, $3, $4, $5::jsonb, $6::jsonb, now())`,
          [randomUUID(), slow, e.type, e.schemaVersion, JSON.stringify(e.data), JSON.stringify(e.metadata)],
        );
        const { positions } = await store.append(fast, [rootCreated(fast)], { expectedVersion: "no_stream" });
        expect(await projections.catchUp()).toBeLessThan(positions[0]!);
        await writer.query("COMMIT");

        await projections.catchUp();
        expect((await store.readStream(slow)).map((e) => e.type)).toEqual(["ContextCreated"]);
        expect(await projections.contexts.get(fast)).not.toBeNull();
        expect(
          await projections.contexts.get(slow),
          "the context whose append committed last is missing from the projections",
        ).not.toBeNull();
        expect((await projections.verify()).ok).toBe(true);
      } finally {
        await writer.end();
        await store.close();
      }
    });
  });
});
