// Live subscriptions on PostgreSQL across processes: woken by NOTIFY, never skipping an event that commits out of order.
import { afterEach, describe, expect, it } from "vitest";
import { asRunId } from "../../src/events/ids.ts";
import { LISTENER_APPLICATION_NAME, openPostgresStore } from "../../src/events/postgresStore.ts";
import type { NewEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { eventually } from "../support/async.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const message = (text: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
  metadata: { correlationId: "run-1", causationId: null, actor: "test" },
});

/**
 * An event inserted around the append function, inside a transaction of the SQL door, so the test
 * decides when it commits. Appends to different streams commit in any order, and so does a raw INSERT,
 * as a foreign or old writer does: readers must never skip either.
 */
const INSERT_IN_TX = `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  VALUES ($1, $2, 1, 'MessageReceived', 1, $3::jsonb, $4::jsonb, now()) RETURNING global_position`;
const raw = (streamId: string, text: string) => [
  crypto.randomUUID(),
  streamId,
  JSON.stringify(message(text).data),
  JSON.stringify(message(text).metadata),
];
/** The append function itself inside a transaction of the SQL door. */
const APPEND_IN_TX = `SELECT actorzero_append($1, -2, $2::jsonb, now()) AS result`;
const row = (text: string) =>
  JSON.stringify([
    {
      event_id: crypto.randomUUID(),
      type: "MessageReceived",
      schema_version: 1,
      data: message(text).data,
      metadata: message(text).metadata,
    },
  ]);

const until = (check: () => boolean, what: string, timeoutMs = 15_000) => eventually(check, timeoutMs, what);

/** A gate the test opens to let a held transaction commit. */
const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
};

const collect = (store: EventStore, after = 0) => {
  const seen: RecordedEvent[] = [];
  const stop = store.subscribe(after, (e) => {
    seen.push(e);
  });
  return { seen, stop, positions: () => seen.map((e) => e.globalPosition) };
};

const ascendingOnce = (positions: number[]) => positions.every((p, i) => i === 0 || p > positions[i - 1]!);

describeWithPostgres("a live subscription on PostgreSQL", () => {
  const db = usePostgresDatabase();
  const opened: EventStore[] = [];
  const open = async (url?: string) => {
    const store = await openPostgresStore({ url: url ?? db.url() });
    opened.push(store);
    return store;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  it("given events appended by another process, delivers them as they commit", async () => {
    const url = await db.fresh();
    const writer = await open(url);
    const reader = await open(url);
    await writer.append("stored", [message("a"), message("b")], { expectedVersion: "no_stream" });
    const sub = collect(reader);
    await until(() => sub.seen.length === 2, "the stored events");
    const { positions } = await writer.append("live", [message("c")], { expectedVersion: "no_stream" });
    await until(() => sub.seen.length === 3, "the live event");
    expect(sub.positions()).toEqual([1, 2, positions[0]]);
    expect(sub.seen.map((e) => e.type === "MessageReceived" && e.data.text)).toEqual(["a", "b", "c"]);
  });

  describe("when transactions commit out of order (rows inserted around the append function)", () => {
    it("when a later position commits first, holds it back until the earlier one commits, then delivers both in order", async () => {
      const url = await db.fresh();
      const writer = await open(url);
      const reader = await open(url);
      const sub = collect(reader);
      const release = gate();
      let heldPosition = 0;
      // Transaction 1 takes position 1 and stays open; transaction 2 takes position 2 and commits.
      const held = writer.sql.transaction(async (tx) => {
        const { rows } = await tx.query<{ global_position: string }>(INSERT_IN_TX, raw("held", "first"));
        heldPosition = Number(rows[0]!.global_position);
        await release.opened;
      });
      let later: Awaited<ReturnType<EventStore["append"]>>;
      try {
        await until(() => heldPosition > 0, "the held append");
        later = await writer.append("later", [message("second")], { expectedVersion: "no_stream" });
        expect(later.positions[0]).toBeGreaterThan(heldPosition);
        expect((await writer.readAll()).map((e) => e.globalPosition)).toEqual(later.positions);
        // The reader's horizon (what its subscriptions may deliver up to) stays below the held position; the
        // final order below shows the later event was not handed out ahead of it.
        expect(await reader.settledPosition!()).toBeLessThan(heldPosition);
        expect(sub.positions()).toEqual([]);
      } finally {
        release.open();
        await held;
      }
      await until(() => sub.seen.length === 2, "both events");
      expect(sub.positions()).toEqual([heldPosition, later.positions[0]]);
    });

    it("when a transaction holding a position rolls back, delivers the events after its gap", async () => {
      const url = await db.fresh();
      const writer = await open(url);
      const reader = await open(url);
      const sub = collect(reader);
      const release = gate();
      let taken = false;
      const rolledBack = writer.sql
        .transaction(async (tx) => {
          await tx.query(INSERT_IN_TX, raw("doomed", "never"));
          taken = true;
          await release.opened;
          throw new Error("roll back");
        })
        .catch(() => "rolled back");
      let after: Awaited<ReturnType<EventStore["append"]>>;
      try {
        await until(() => taken, "the doomed append");
        after = await writer.append("after", [message("kept")], { expectedVersion: "no_stream" });
        expect(await reader.settledPosition!(), "the open transaction's position holds the horizon back").toBeLessThan(
          after.positions[0]!,
        );
        expect(sub.seen).toEqual([]);
      } finally {
        release.open();
      }
      expect(await rolledBack).toBe("rolled back");
      // The rollback sends no notification: the subscriber finds the gap settled by looking again.
      await until(() => sub.seen.length === 1, "the event after the gap");
      expect(sub.positions()).toEqual(after.positions);
      expect(after.positions[0]).toBe(2);
    });
  });

  describe("when an append through the append function holds its transaction open", () => {
    it("lets appends to other contexts commit meanwhile, delivers them after it in position order, and the log verifies and seals", async () => {
      const url = await db.fresh();
      const writer = await open(url);
      const other = await open(url);
      const reader = await open(url);
      const sub = collect(reader);
      const release = gate();
      let heldPosition = 0;
      const held = writer.sql.transaction(async (tx) => {
        const { rows } = await tx.query<{ result: { positions: number[] } }>(APPEND_IN_TX, ["held", row("first")]);
        heldPosition = rows[0]!.result.positions[0]!;
        await release.opened;
      });
      await until(() => heldPosition > 0, "the held append");
      // Other contexts, from this process and another one, append and commit while it is held.
      const later = await Promise.all(
        [writer, other, writer, other].map((s, i) =>
          s.append(`later-${i}`, [message(`later ${i}`)], { expectedVersion: "no_stream" }),
        ),
      );
      const laterPositions = later.map((r) => r.positions[0]!).sort((a, b) => a - b);
      expect(laterPositions.every((p) => p > heldPosition)).toBe(true);
      expect(await reader.settledPosition!(), "nothing above the held position is final while it is open").toBeLessThan(
        heldPosition,
      );
      expect(sub.seen).toEqual([]);
      release.open();
      await held;
      await until(() => sub.seen.length === 5, "every event");
      expect(sub.positions()).toEqual([heldPosition, ...laterPositions]);
      const verified = await reader.verify();
      expect(verified.problems).toEqual([]);
      expect(verified.head.position).toBe(laterPositions.at(-1));
      expect(verified.unsealed).toBe(0);
    });
  });

  it("given many writers whose transactions commit in any order, delivers every event exactly once in position order", async () => {
    const url = await db.fresh();
    const writers = await Promise.all(Array.from({ length: 6 }, () => open(url)));
    const reader = await open(url);
    const late = await open(url);
    const sub = collect(reader);
    const total = { appended: 0 };
    const work = writers.map(async (writer, w) => {
      for (let i = 0; i < 25; i++) {
        if (i % 5 === 2) {
          // Take a position now, commit after a pause, while the other writers commit theirs.
          await writer.sql.transaction(async (tx) => {
            await tx.query(INSERT_IN_TX, raw(`raw-w${w}-${i}`, `w${w}-${i}`));
            await tx.query(`SELECT pg_sleep($1)`, [0.02 + ((w * 7 + i) % 5) * 0.03]);
          });
          total.appended += 1;
        } else {
          await writer.append(`w${w}`, [message(`w${w}-${i}a`), message(`w${w}-${i}b`)], { expectedVersion: "any" });
          total.appended += 2;
        }
      }
    });
    // A subscriber that starts mid-way (once some events are in) must end with the same sequence.
    await until(() => total.appended >= 20, "the first writes");
    const sub2 = collect(late);
    await Promise.all(work);
    // A last event after all the others: once both subscribers have it, anything delivered twice is in.
    await writers[0]!.append("last", [message("last")], { expectedVersion: "no_stream" });
    total.appended += 1;
    const all = (await reader.readAll(0, 10_000)).map((e) => e.globalPosition);
    expect(all).toHaveLength(total.appended);
    const lastPosition = all.at(-1)!;
    await until(
      () => sub.positions().includes(lastPosition) && sub2.positions().includes(lastPosition),
      "the last event",
    );
    expect(sub.positions()).toEqual(all);
    expect(sub2.positions()).toEqual(all);
    expect(ascendingOnce(sub.positions())).toBe(true);
  });

  it("when its notification connection is cut, reconnects and catches up on what was appended meanwhile", async () => {
    const url = await db.fresh();
    const writer = await open(url);
    const reader = await open(url);
    const sub = collect(reader);
    await writer.append("a", [message("before")], { expectedVersion: "no_stream" });
    await until(() => sub.seen.length === 1, "the first event");
    const cut = async () =>
      (
        await writer.sql.query<{ cut: boolean }>(
          `SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
          [LISTENER_APPLICATION_NAME],
        )
      ).rows;
    const rows = await eventually(
      async () => {
        const cutRows = await cut();
        return cutRows.length > 0 ? cutRows : undefined;
      },
      5_000,
      "the listener's connection",
    );
    expect(rows).toEqual([{ cut: true }]);
    await writer.append("a", [message("meanwhile")], { expectedVersion: 1 });
    await until(() => sub.seen.length === 2, "the event appended while disconnected");
    expect(sub.seen.map((e) => e.type === "MessageReceived" && e.data.text)).toEqual(["before", "meanwhile"]);
  });

  it("given a subscriber that stopped, calls its listener no more", async () => {
    const url = await db.fresh();
    const writer = await open(url);
    const reader = await open(url);
    const sub = collect(reader);
    // A second subscriber of the same store, woken by the same notifications: once it has the second
    // event, the stopped one would have had it too.
    const witness = collect(reader);
    await writer.append("a", [message("one")], { expectedVersion: "no_stream" });
    await until(() => sub.seen.length === 1, "the first event");
    sub.stop();
    await writer.append("a", [message("two")], { expectedVersion: 1 });
    await until(() => witness.seen.length === 2, "the second event, at the other subscriber");
    expect(sub.seen).toHaveLength(1);
  });
});
