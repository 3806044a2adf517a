// The lease table on PostgreSQL: one write per run (taking the lease), the run's end in the log frees it.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { asRunId } from "../../src/events/ids.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { EventStore, SqlExecutor } from "../../src/events/store.ts";
import { leaseHolder, sqlLeases } from "../../src/runtime/leases.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { rootCreated } from "../support/rootCreated.ts";

/** The SQL door of `store`, remembering each statement that writes the lease table. */
const countingLeaseWrites = (store: EventStore): { sql: SqlExecutor; writes: string[] } => {
  const writes: string[] = [];
  const sql: SqlExecutor = {
    ...store.sql,
    query: async <R>(text: string, params?: unknown[]) => {
      if (/^\s*(WITH[\s\S]*INSERT INTO context_leases|UPDATE context_leases|DELETE FROM context_leases)/.test(text))
        writes.push(text.trim().split(/\s+/).slice(0, 3).join(" "));
      return store.sql.query<R>(text, params);
    },
  };
  return { sql, writes };
};

describeWithPostgres("run leases in the log's database", () => {
  const db = usePostgresDatabase("actorzero_lease_rows");

  describe("when a run of the holder ends in the log", () => {
    it("frees the lease for another owner with no write by the holder, and the takeover names the stream's version", async () => {
      const store = await openPostgresStore({ url: db.url() });
      const a = countingLeaseWrites(store);
      const alpha = await sqlLeases(a.sql, { owner: "alpha", ttlMs: 60_000, exclusive: false });
      const beta = await sqlLeases(store.sql, { owner: "beta", ttlMs: 60_000, exclusive: false });
      const id = randomUUID();
      const runId = asRunId(randomUUID());
      try {
        await store.append(id, [rootCreated(id)], { expectedVersion: "no_stream" });
        expect(await alpha.acquire(id)).toEqual({ ok: true, takenOver: false, version: 1 });
        await store.append(
          id,
          [
            { type: "MessageReceived", data: { runId, text: "hi", sender: "user" } },
            { type: "RunStarted", data: { runId, model: "m", superior: null } },
          ],
          {
            expectedVersion: 1,
          },
        );

        // While the run is open, the lease binds.
        expect(await beta.acquire(id)).toEqual({ ok: false, owner: "alpha" });
        expect(await leaseHolder(store.sql, id)).toBe("alpha");
        expect(await beta.unowned([id])).toEqual([]);

        // The run ends in the log; the holder learns it and writes nothing.
        await store.append(id, [{ type: "RunCompleted", data: { runId, response: "done" } }], { expectedVersion: 3 });
        await alpha.runEnded(id);
        expect(a.writes).toEqual(["WITH previous AS"]);
        expect(await leaseHolder(store.sql, id)).toBeNull();
        expect(await beta.unowned([id])).toEqual([id]);

        // Another owner takes it at once, at the stream's version now.
        expect(await beta.acquire(id)).toEqual({ ok: true, takenOver: true, version: 4 });
        expect(await alpha.acquire(id)).toEqual({ ok: false, owner: "beta" });
        expect(await leaseHolder(store.sql, id)).toBe("beta");
      } finally {
        await alpha.close();
        await beta.close();
        await store.close();
      }
    });

    it("keeps binding when the holder's earlier run ended before it took the lease again", async () => {
      const store = await openPostgresStore({ url: db.url() });
      const alpha = await sqlLeases(store.sql, { owner: "alpha", ttlMs: 60_000, exclusive: false });
      const beta = await sqlLeases(store.sql, { owner: "beta", ttlMs: 60_000, exclusive: false });
      const id = randomUUID();
      const first = asRunId(randomUUID());
      try {
        await store.append(
          id,
          [
            rootCreated(id),
            { type: "MessageReceived", data: { runId: first, text: "hi", sender: "user" } },
            { type: "RunStarted", data: { runId: first, model: "m", superior: null } },
            { type: "RunCompleted", data: { runId: first, response: "done" } },
          ],
          { expectedVersion: "no_stream" },
        );
        // Taken after the first run's end: that end does not free it.
        expect(await alpha.acquire(id)).toMatchObject({ ok: true, version: 4 });
        expect(await beta.acquire(id)).toEqual({ ok: false, owner: "alpha" });
      } finally {
        await alpha.close();
        await beta.close();
        await store.close();
      }
    });
  });

  describe("when a lease is taken and its run never starts", () => {
    it("is freed by release, which deletes the row", async () => {
      const store = await openPostgresStore({ url: db.url() });
      const alpha = await sqlLeases(store.sql, { owner: "alpha", ttlMs: 60_000, exclusive: false });
      const beta = await sqlLeases(store.sql, { owner: "beta", ttlMs: 60_000, exclusive: false });
      const id = randomUUID();
      try {
        await store.append(id, [rootCreated(id)], { expectedVersion: "no_stream" });
        expect(await alpha.acquire(id)).toMatchObject({ ok: true });
        expect(await beta.acquire(id)).toEqual({ ok: false, owner: "alpha" });
        await alpha.release(id);
        expect((await store.sql.query(`SELECT 1 FROM context_leases WHERE context_id = $1`, [id])).rows).toEqual([]);
        expect(await beta.acquire(id)).toEqual({ ok: true, takenOver: false, version: 1 });
      } finally {
        await alpha.close();
        await beta.close();
        await store.close();
      }
    });
  });

  describe("when several runs take leases at the same moment", () => {
    it("takes those asked for while one is in flight in one statement, each with the answer it would have alone", async () => {
      const store = await openPostgresStore({ url: db.url() });
      const a = countingLeaseWrites(store);
      const alpha = await sqlLeases(a.sql, { owner: "alpha", ttlMs: 60_000, exclusive: false });
      const beta = await sqlLeases(store.sql, { owner: "beta", ttlMs: 60_000, exclusive: false });
      const ids = Array.from({ length: 5 }, () => randomUUID());
      try {
        for (const id of ids) await store.append(id, [rootCreated(id)], { expectedVersion: "no_stream" });
        expect(await beta.acquire(ids[3]!)).toEqual({ ok: true, takenOver: false, version: 1 });
        // The first goes at once, alone; the other four (one of them held by beta, one asked twice) wait for it, then go together.
        const results = await Promise.all([...ids, ids[1]!].map((id) => alpha.acquire(id)));
        expect(results).toEqual([
          { ok: true, takenOver: false, version: 1 },
          { ok: true, takenOver: false, version: 1 },
          { ok: true, takenOver: false, version: 1 },
          { ok: false, owner: "beta" },
          { ok: true, takenOver: false, version: 1 },
          { ok: true, takenOver: false, version: 1 },
        ]);
        expect(a.writes).toEqual(["WITH previous AS", "WITH previous AS"]);
        for (const [i, id] of ids.entries()) expect(await leaseHolder(store.sql, id)).toBe(i === 3 ? "beta" : "alpha");
      } finally {
        await alpha.close();
        await beta.close();
        await store.close();
      }
    });
  });
});
