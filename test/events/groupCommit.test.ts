// Group commit on PGlite: appends that arrive together share one message and one transaction, and each keeps its own outcome.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConcurrencyError, StoreError } from "../../src/events/errors.ts";
import { asEventId, asRunId } from "../../src/events/ids.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import type { AppendResult } from "../../src/events/store.ts";
import { gate } from "../support/async.ts";
import { type FreshPgliteStore, freshPgliteStore } from "../support/pglite.ts";

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

  const count = async (eventIds: readonly string[]) =>
    Number((await store.sql.query<{ n: string | number }>("SELECT count(*) AS n FROM events WHERE event_id = ANY($1::uuid[])", [eventIds])).rows[0]!.n);

  describe("when one append of a group is refused", () => {
    it("refuses it with the error it gets alone, and stores every other append of the group once", async () => {
      const owner = newStream();
      const taken = randomUUID();
      await store.append(owner, [message("owner", taken)], { expectedVersion: "no_stream" });
      const reused = (id: string) => store.append(id, [message("reuses an id", taken)], { expectedVersion: "no_stream" });
      const stale = () => store.append(owner, [message("stale")], { expectedVersion: 5 });
      const reusedAlone = await reused(newStream()).catch((e: unknown) => e);
      const staleAlone = await stale().catch((e: unknown) => e);
      expect(reusedAlone).toMatchObject({ _tag: "StoreError", reason: "refused" });
      expect(staleAlone).toBeInstanceOf(ConcurrencyError);

      const head = await store.headPosition();
      const good = range(0, 16).map(() => ({ id: newStream(), eventId: randomUUID() }));
      const append = (g: (typeof good)[number]) => store.append(g.id, [message(g.id, g.eventId)], { expectedVersion: "no_stream" });
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
      expect(reusedError).toMatchObject({ reason: (reusedAlone as StoreError).reason, message: (reusedAlone as StoreError).message.replace(/'ctx-[^']*'/, `'${reusedIn}'`) });
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
      const first = range(0, 8).map(() => ({ id: newStream(), batch: [message("a", randomUUID()), message("b", randomUUID())] }));
      const original = await Promise.all(first.map((f) => store.append(f.id, f.batch, { expectedVersion: "no_stream" })));
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
        return Number((await tx.query<{ n: string | number }>("SELECT count(*) AS n FROM events WHERE global_position > $1", [head])).rows[0]!.n);
      });
      await entered.promise;
      const appends = range(0, 8).map((i) => store.append(newStream(), [message(`${i}`)], { expectedVersion: "no_stream" }));
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
