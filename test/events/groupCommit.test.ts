// Group commit on PGlite and PostgreSQL: appends that arrive together share one message and one transaction, and each keeps its own outcome.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendBatcher, type ExecStatements } from "../../src/events/appendBatcher.ts";
import { ConcurrencyError, StoreError } from "../../src/events/errors.ts";
import { asEventId, asRunId } from "../../src/events/ids.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import type { AppendResult } from "../../src/events/store.ts";
import { gate } from "../support/async.ts";
import { type FreshPgliteStore, freshPgliteStore } from "../support/pglite.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const message = (text: string, eventId?: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
  ...(eventId === undefined ? {} : { eventId: asEventId(eventId) }),
});

const newStream = () => `ctx-${randomUUID()}`;

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe("group commit on the PGlite store", () => {
  let store: FreshPgliteStore;
  beforeAll(async () => {
    store = await freshPgliteStore();
  });
  afterAll(async () => {
    await store?.close();
  });

  /**
   * The next transaction id PostgreSQL will hand out, read without taking one. Every append takes one
   * for its transaction (actorzero_append asks for it), so the ids used between two reads count the
   * transactions the appends went in; nothing else writes to this store meanwhile.
   */
  const nextXid = async () =>
    Number(
      (await store.sql.query<{ xid: string }>("SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid")).rows[0]!
        .xid,
    );

  const count = async (eventIds: readonly string[]) =>
    Number(
      (
        await store.sql.query<{ n: string | number }>(
          "SELECT count(*) AS n FROM events WHERE event_id = ANY($1::uuid[])",
          [eventIds],
        )
      ).rows[0]!.n,
    );

  describe("when 64 contexts append at the same moment", () => {
    it("stores every append, in call order, in fewer transactions than appends, and the chain verifies", async () => {
      const streams = range(0, 64).map(newStream);
      const head = await store.headPosition();
      const before = await nextXid();

      const results = await Promise.all(
        streams.map((id, i) =>
          store.append(id, [message(`${i}.1`), message(`${i}.2`)], { expectedVersion: "no_stream" }),
        ),
      );

      const transactions = (await nextXid()) - before;
      // Alone, each append is a transaction of its own: 64. Grouped, the first goes alone and the 63
      // that queued behind it go together.
      expect(transactions).toBeLessThan(streams.length);
      expect(transactions).toBe(2);
      const start = results[0]!.positions[0]!;
      expect(start).toBeGreaterThan(head);
      results.forEach((result, i) => {
        expect(result.nextExpectedVersion).toBe(2);
        expect(result.positions).toEqual([start + 2 * i, start + 2 * i + 1]);
        expect(result.events.map((e) => [e.streamId, e.streamVersion])).toEqual([
          [streams[i], 1],
          [streams[i], 2],
        ]);
      });
      expect(await store.readAll(head, 1000)).toEqual(results.flatMap((r) => r.events));
      expect(await store.verify()).toMatchObject({ ok: true, problems: [] });
    });
  });

  describe("when one append of a group is refused", () => {
    it("refuses it with the error it gets alone, and stores every other append of the group once", async () => {
      const owner = newStream();
      const taken = randomUUID();
      await store.append(owner, [message("owner", taken)], { expectedVersion: "no_stream" });
      const reused = (id: string) =>
        store.append(id, [message("reuses an id", taken)], { expectedVersion: "no_stream" });
      const stale = () => store.append(owner, [message("stale")], { expectedVersion: 5 });
      const reusedAlone = await reused(newStream()).catch((e: unknown) => e);
      const staleAlone = await stale().catch((e: unknown) => e);
      expect(reusedAlone).toMatchObject({ _tag: "StoreError", reason: "refused" });
      expect(staleAlone).toBeInstanceOf(ConcurrencyError);

      const head = await store.headPosition();
      const good = range(0, 16).map(() => ({ id: newStream(), eventId: randomUUID() }));
      const append = (g: (typeof good)[number]) =>
        store.append(g.id, [message(g.id, g.eventId)], { expectedVersion: "no_stream" });
      const reusedIn = newStream();
      const settled = await Promise.allSettled([
        ...good.slice(0, 6).map(append),
        reused(reusedIn),
        ...good.slice(6, 11).map(append),
        stale(),
        ...good.slice(11).map(append),
      ]);

      const reusedError = (settled[6] as PromiseRejectedResult).reason;
      expect(reusedError).toBeInstanceOf(StoreError);
      expect(reusedError).toMatchObject({
        reason: (reusedAlone as StoreError).reason,
        message: (reusedAlone as StoreError).message.replace(/'ctx-[^']*'/, `'${reusedIn}'`),
      });
      const staleError = (settled[12] as PromiseRejectedResult).reason;
      expect(staleError).toBeInstanceOf(ConcurrencyError);
      expect(staleError).toMatchObject({ actualVersion: 1, expectedVersion: 5 });
      const fulfilled = settled.filter((r): r is PromiseFulfilledResult<AppendResult> => r.status === "fulfilled");
      expect(fulfilled).toHaveLength(good.length);
      expect(fulfilled.map((r) => r.value.events[0]!.streamId)).toEqual(good.map((g) => g.id));
      expect(await count(good.map((g) => g.eventId))).toBe(good.length);
      expect((await store.readAll(head, 1000)).map((e) => e.eventId)).toEqual(good.map((g) => g.eventId));
      expect(await store.streamVersion(reusedIn)).toBe(0);
      expect(await store.streamVersion(owner)).toBe(1);
      expect(await store.verify()).toMatchObject({ ok: true, problems: [] });
    });
  });

  describe("when appends already stored are sent again with expected version any, among new ones", () => {
    it("answers each re-append with its original positions and stores only the new events", async () => {
      const first = range(0, 8).map(() => ({
        id: newStream(),
        batch: [message("a", randomUUID()), message("b", randomUUID())],
      }));
      const original = await Promise.all(
        first.map((f) => store.append(f.id, f.batch, { expectedVersion: "no_stream" })),
      );
      const head = await store.headPosition();
      const fresh = range(0, 4).map(() => ({ id: newStream(), batch: [message("new", randomUUID())] }));
      // The same new append twice in one group: the second finds the first's events.
      const twice = { id: newStream(), batch: [message("twice", randomUUID())] };

      const again = await Promise.all([
        ...first.slice(0, 4).map((f) => store.append(f.id, f.batch, { expectedVersion: "any" })),
        ...fresh.map((f) => store.append(f.id, f.batch, { expectedVersion: "any" })),
        store.append(twice.id, twice.batch, { expectedVersion: "any" }),
        store.append(twice.id, twice.batch, { expectedVersion: "any" }),
        ...first.slice(4).map((f) => store.append(f.id, f.batch, { expectedVersion: "any" })),
      ]);

      expect([...again.slice(0, 4), ...again.slice(10)]).toEqual(original);
      expect(again[9]).toEqual(again[8]);
      const added = await store.readAll(head, 1000);
      expect(added.map((e) => e.streamId)).toEqual([...fresh.map((f) => f.id), twice.id]);
      expect(added).toEqual([...again.slice(4, 9).flatMap((r) => r.events)]);
      expect(await store.verify()).toMatchObject({ ok: true, problems: [] });
    });
  });

  describe("when contexts append while a user's transaction is open", () => {
    it("holds them until it ends, then stores them all", async () => {
      const entered = gate();
      const release = gate();
      const head = await store.headPosition();
      const transaction = store.sql.transaction(async (tx) => {
        entered.open();
        await release.promise;
        return Number(
          (
            await tx.query<{ n: string | number }>("SELECT count(*) AS n FROM events WHERE global_position > $1", [
              head,
            ])
          ).rows[0]!.n,
        );
      });
      await entered.promise;
      const appends = range(0, 8).map((i) =>
        store.append(newStream(), [message(`${i}`)], { expectedVersion: "no_stream" }),
      );
      release.open();

      expect(await transaction).toBe(0);
      const results = await Promise.all(appends);
      // Contiguous, though not from head + 1: a group that failed earlier took positions it did not keep.
      const positions = results.flatMap((r) => r.positions);
      expect(positions[0]).toBeGreaterThan(head);
      expect(positions).toEqual(range(positions[0]!, 8));
      expect(await store.verify()).toMatchObject({ ok: true, problems: [] });
    });
  });
});

describe("the append batcher", () => {
  /** An exec that answers each statement with its own text, records every message and fails those naming "bad". */
  const fakeExec = () => {
    const messages: string[][] = [];
    const exec: ExecStatements = async (sql) => {
      const statements = sql.split(";\n");
      messages.push(statements);
      if (statements.some((s) => s.includes("bad"))) throw new Error(`refused: ${sql}`);
      return statements.map((s) => ({ rows: [s] }));
    };
    return { exec, messages };
  };

  it("sends a lone statement before run returns, alone", async () => {
    const { exec, messages } = fakeExec();
    const answer = appendBatcher(exec).run("one");
    expect(messages).toEqual([["one"]]);
    await expect(answer).resolves.toEqual(["one"]);
  });

  it("groups what queued while a message was in flight, in order, within the statement and text limits", async () => {
    const { exec, messages } = fakeExec();
    const batcher = appendBatcher(exec, { maxStatements: 3, maxChars: 12 });
    const statements = ["s0", "s1", "s2", "s3", "s4", "s5", "longer", "s7", "s8", "longer than the limit"];
    const answers = await Promise.all(statements.map((s) => batcher.run(s)));
    expect(answers).toEqual(statements.map((s) => [s]));
    // Joined by ";\n": "s1;\ns2;\ns3" is 10 characters and 3 statements; "s4;\ns5;\nlonger" would be 14.
    expect(messages).toEqual([
      ["s0"],
      ["s1", "s2", "s3"],
      ["s4", "s5"],
      ["longer", "s7"],
      ["s8"],
      ["longer than the limit"],
    ]);
  });

  it("sends each member of a failed group again alone, in order, so only the bad one fails", async () => {
    const { exec, messages } = fakeExec();
    const batcher = appendBatcher(exec);
    const settled = await Promise.allSettled(["first", "x", "bad", "y"].map((s) => batcher.run(s)));
    expect(settled.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([
      ["first"],
      ["x"],
      "refused: bad",
      ["y"],
    ]);
    expect(messages).toEqual([["first"], ["x", "bad", "y"], ["x"], ["bad"], ["y"]]);
  });
});

describeWithPostgres("group commit on the PostgreSQL store", () => {
  const db = usePostgresDatabase("actorzero_group_commit");

  it("given 64 contexts appending at the same moment in one process, commits them in fewer transactions over a few connections, and each gets its own outcome", async () => {
    const url = await db.fresh();
    const store = await openPostgresStore({ url });
    try {
      const streams = range(0, 64).map(newStream);
      const results = await Promise.all(
        streams.map((id, i) =>
          store.append(id, [message(`${i}.1`), message(`${i}.2`)], { expectedVersion: "no_stream" }),
        ),
      );
      // The rows a transaction inserted share its id (xmin): one per group.
      const { rows } = await store.sql.query<{ n: number }>("SELECT count(DISTINCT xmin::text)::int AS n FROM events");
      // Alone, each append is a transaction of its own: 64.
      expect(rows[0]!.n).toBeLessThan(streams.length / 2);
      expect(rows[0]!.n).toBeGreaterThan(1);
      results.forEach((result, i) => {
        expect(result.nextExpectedVersion).toBe(2);
        expect(result.events.map((e) => [e.streamId, e.streamVersion])).toEqual([
          [streams[i], 1],
          [streams[i], 2],
        ]);
      });
      const stale = await store
        .append(streams[0]!, [message("stale")], { expectedVersion: 5 })
        .catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(ConcurrencyError);
      expect(await store.verify()).toMatchObject({ ok: true, problems: [], events: 128 });
    } finally {
      await store.close();
    }
  });
});
