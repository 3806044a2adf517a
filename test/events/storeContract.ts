// The event store contract, written once and run against every adapter (PGlite in memory, on disk, PostgreSQL).
import { randomUUID } from "node:crypto";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ConcurrencyError, EventDecodeError, EventValidationError, StoreError } from "../../src/events/errors.ts";
import { asEventId, asRunId } from "../../src/events/ids.ts";
import type { NewEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { ROW_ENCODING_SQL } from "../../src/events/chainSql.ts";
import { appendRows } from "../../src/events/appendRows.ts";
import { APPEND_SQL, encodeExpectedVersion } from "../../src/events/appendSql.ts";

/** Opens a store on a log that has the schema; `fresh` says the test needs an empty log of its own. */
export type StoreOpener = (options: { fresh: boolean; now?: () => Date }) => Promise<EventStore>;

const message = (text: string, eventId?: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
  ...(eventId === undefined ? {} : { eventId: asEventId(eventId) }),
});

const texts = (events: readonly RecordedEvent[]) =>
  events.map((e) => (e.type === "MessageReceived" ? e.data.text : e.type));

const newStream = () => `ctx-${randomUUID()}`;

const INSERT_ROW = `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  VALUES ($1, $2, $3, $4, 1, $5::jsonb, '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now())
  RETURNING global_position`;

/** `gc()` without starting node with --expose-gc. */
const gc = (): (() => void) => {
  v8.setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
};

export const storeContract = (name: string, open: StoreOpener) => {
  describe(`the event store contract: ${name}`, () => {
    let store: EventStore;
    const fixedNow = new Date("2030-01-02T03:04:05.678Z");
    beforeAll(async () => {
      store = await open({ fresh: false, now: () => fixedNow });
    });
    afterAll(async () => {
      await store?.close();
    });

    describe("when events are appended to several streams", () => {
      it("reads them back from the whole log in global order, with strictly increasing positions", async () => {
        const [a, b] = [newStream(), newStream()];
        const head = await store.headPosition();
        await store.append(a, [message("a1")], { expectedVersion: "no_stream" });
        await store.append(b, [message("b1"), message("b2")], { expectedVersion: "no_stream" });
        await store.append(a, [message("a2")], { expectedVersion: 1 });

        const all = await store.readAll(head, 100);
        expect(texts(all)).toEqual(["a1", "b1", "b2", "a2"]);
        const positions = all.map((e) => e.globalPosition);
        expect(positions).toEqual([...positions].sort((x, y) => x - y));
        expect(new Set(positions).size).toBe(4);
        expect(await store.headPosition()).toBe(positions[3]);
      });

      it("numbers each stream's events 1, 2, 3 … without gaps, and readStream starts at fromVersion", async () => {
        const id = newStream();
        const first = await store.append(id, [message("1"), message("2"), message("3")], {
          expectedVersion: "no_stream",
        });
        const second = await store.append(id, [message("4")], { expectedVersion: first.nextExpectedVersion });
        await store.append(id, [message("5"), message("6")], { expectedVersion: second.nextExpectedVersion });

        const events = await store.readStream(id);
        expect(events.map((e) => e.streamVersion)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(texts(events)).toEqual(["1", "2", "3", "4", "5", "6"]);
        expect(first).toEqual({
          nextExpectedVersion: 3,
          positions: events.slice(0, 3).map((e) => e.globalPosition),
          events: events.slice(0, 3),
        });
        expect(texts(await store.readStream(id, 5))).toEqual(["5", "6"]);
        expect(await store.streamVersion(id)).toBe(6);
        expect(await store.streamVersion(newStream())).toBe(0);
      });

      it("records the store clock's time, the stream id, a fresh event id and empty metadata", async () => {
        const id = newStream();
        await store.append(id, [message("x")], { expectedVersion: "no_stream" });
        const [event] = await store.readStream(id);
        expect(event).toMatchObject({
          streamId: id,
          streamVersion: 1,
          schemaVersion: 1,
          recordedAt: fixedNow.toISOString(),
        });
        expect(event!.eventId).toMatch(/^[0-9a-f-]{36}$/);
        expect(event!.metadata).toEqual({ correlationId: null, causationId: null, actor: null });
      });
    });

    describe("when an append's data is stored differently from how it was sent", () => {
      it("returns the rows as a read gives them: text JSONB refuses replaced, keys in JSONB's order, the store's time", async () => {
        const id = newStream();
        const sent: NewEvent = {
          type: "ModelReplied",
          data: {
            runId: asRunId("run-1"),
            step: 1,
            text: "a\u0000b",
            toolCalls: [{ id: "c1", name: "t", arguments: { zeta: 1, a: { yy: "\uD800", b: [1, { é: 1, z: 2 }] } } }],
            usage: null,
          },
        };
        const result = await store.append(id, [sent, message("plain")], { expectedVersion: "no_stream" });
        const read = await store.readStream(id);
        expect(result.events).toEqual(read);
        // toEqual ignores key order; the model sees the arguments as JSON text, so the order must match too.
        expect(JSON.stringify(result.events)).toBe(JSON.stringify(read));
        expect(result.events[0]).toMatchObject({
          schemaVersion: 1,
          recordedAt: fixedNow.toISOString(),
          streamVersion: 1,
        });
        expect((result.events[0]!.data as { text: string }).text).toBe("a\uFFFDb");
      });
    });

    describe("when a stream id and the data hold quotes, backslashes and SQL", () => {
      it("stores them exactly as sent, and a stream id holding a NUL is refused with nothing written", async () => {
        const id = `ctx-'); DELETE FROM events; -- \\' \\\\ $1 "q" ${randomUUID()}`;
        const text = `it's \\'); DROP TABLE events; --\\n E'x' $$ \\\\' é 日本`;
        const head = await store.headPosition();
        await store.append(id, [message(text), message("'")], { expectedVersion: "no_stream" });
        await store.append(id, [message("\\")], { expectedVersion: 2 });
        const read = await store.readStream(id);
        expect(read.map((e) => e.streamId)).toEqual([id, id, id]);
        expect(texts(read)).toEqual([text, "'", "\\"]);
        expect(await store.headPosition()).toBe(head + 3);

        await expect(
          store.append(`ctx-\u0000-${randomUUID()}`, [message("x")], { expectedVersion: "no_stream" }),
        ).rejects.toThrow();
        expect(await store.headPosition()).toBe(head + 3);
      });
    });

    describe("given an expected version", () => {
      it("appends when the stream is at that version and refuses with ConcurrencyError otherwise", async () => {
        const id = newStream();
        await store.append(id, [message("1"), message("2")], { expectedVersion: "no_stream" });
        await expect(store.append(id, [message("3")], { expectedVersion: 2 })).resolves.toMatchObject({
          nextExpectedVersion: 3,
        });

        const error = await store.append(id, [message("stale")], { expectedVersion: 2 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ streamId: id, expectedVersion: 2, actualVersion: 3, retryable: true });
        expect(texts(await store.readStream(id))).toEqual(["1", "2", "3"]);
      });

      it("refuses a version ahead of the stream too (no gap is ever written)", async () => {
        const id = newStream();
        await store.append(id, [message("1")], { expectedVersion: "no_stream" });
        await expect(store.append(id, [message("x")], { expectedVersion: 5 })).rejects.toMatchObject({
          actualVersion: 1,
        });
        expect(await store.streamVersion(id)).toBe(1);
      });

      it("with no_stream, appends to a new stream and refuses an existing one", async () => {
        const id = newStream();
        await store.append(id, [message("1")], { expectedVersion: "no_stream" });
        await expect(store.append(id, [message("again")], { expectedVersion: "no_stream" })).rejects.toMatchObject({
          _tag: "ConcurrencyError",
          expectedVersion: "no_stream",
          actualVersion: 1,
        });
      });

      it("with any, appends on top whatever the version", async () => {
        const id = newStream();
        await expect(store.append(id, [message("1")], { expectedVersion: "any" })).resolves.toMatchObject({
          nextExpectedVersion: 1,
        });
        await expect(store.append(id, [message("2"), message("3")], { expectedVersion: "any" })).resolves.toMatchObject(
          {
            nextExpectedVersion: 3,
          },
        );
        expect((await store.readStream(id)).map((e) => e.streamVersion)).toEqual([1, 2, 3]);
      });

      it("refuses a malformed expected version before writing", async () => {
        await expect(store.append(newStream(), [message("x")], { expectedVersion: -1 })).rejects.toBeInstanceOf(
          RangeError,
        );
        await expect(store.append(newStream(), [message("x")], { expectedVersion: 1.5 })).rejects.toBeInstanceOf(
          RangeError,
        );
      });
    });

    describe("when two appends race with the same expected version", () => {
      it("lets exactly one win; the other gets ConcurrencyError with the winner's version", async () => {
        const id = newStream();
        await store.append(id, [message("base")], { expectedVersion: "no_stream" });
        const results = await Promise.allSettled([
          store.append(id, [message("left")], { expectedVersion: 1 }),
          store.append(id, [message("right-1"), message("right-2")], { expectedVersion: 1 }),
        ]);
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect(lost[0]!.reason).toBeInstanceOf(ConcurrencyError);
        const stored = await store.readStream(id);
        expect((lost[0]!.reason as ConcurrencyError).actualVersion).toBe(stored.length);
        expect(texts(stored).slice(1)).toSatisfy(
          (t: string[]) => t.join() === "left" || t.join() === "right-1,right-2",
        );
      });

      it("with any, both land, one after the other", async () => {
        const id = newStream();
        await Promise.all([
          store.append(id, [message("p")], { expectedVersion: "any" }),
          store.append(id, [message("q")], { expectedVersion: "any" }),
          store.append(id, [message("r")], { expectedVersion: "any" }),
        ]);
        expect((await store.readStream(id)).map((e) => e.streamVersion)).toEqual([1, 2, 3]);
      });
    });

    describe("when an append is sent again with the same event ids", () => {
      it("returns the original positions and writes nothing", async () => {
        const id = newStream();
        const ids = [randomUUID(), randomUUID()];
        const batch = [message("1", ids[0]), message("2", ids[1])];
        const first = await store.append(id, batch, { expectedVersion: "no_stream" });
        await store.append(id, [message("3")], { expectedVersion: 2 });
        const head = await store.headPosition();

        await expect(store.append(id, batch, { expectedVersion: "no_stream" })).resolves.toEqual(first);
        await expect(store.append(id, batch, { expectedVersion: "any" })).resolves.toEqual(first);
        // The rows answered are the stored ones, not the ones sent again.
        const resent = await store.append(id, [message("changed", ids[0]), message("too", ids[1])], {
          expectedVersion: 0,
        });
        expect(texts(resent.events)).toEqual(["1", "2"]);
        expect(resent.events).toEqual((await store.readStream(id)).slice(0, 2));
        expect(await store.headPosition()).toBe(head);
        const { rows } = await store.sql.query<{ n: string | number }>(
          "SELECT count(*) AS n FROM events WHERE event_id = ANY($1::uuid[])",
          [ids],
        );
        expect(Number(rows[0]!.n)).toBe(2);
        expect(await store.streamVersion(id)).toBe(3);
      });

      it("refuses ids stored in another stream, or a batch of which only some are stored", async () => {
        const id = newStream();
        const stored = randomUUID();
        await store.append(id, [message("1", stored)], { expectedVersion: "no_stream" });
        await expect(
          store.append(newStream(), [message("1", stored)], { expectedVersion: "any" }),
        ).rejects.toMatchObject({
          _tag: "StoreError",
          reason: "refused",
        });
        await expect(
          store.append(id, [message("1", stored), message("new")], { expectedVersion: "any" }),
        ).rejects.toMatchObject({
          reason: "refused",
        });
        expect(await store.streamVersion(id)).toBe(1);
      });
    });

    describe("when a client tries to change the log", () => {
      it("refuses UPDATE, DELETE and TRUNCATE of events in the database itself", async () => {
        const id = newStream();
        await store.append(id, [message("keep me")], { expectedVersion: "no_stream" });
        await expect(store.sql.query("UPDATE events SET type = 'X' WHERE stream_id = $1", [id])).rejects.toThrow(
          /append-only/,
        );
        await expect(store.sql.exec(`DELETE FROM events WHERE stream_id = '${id}'`)).rejects.toThrow(/append-only/);
        await expect(store.sql.exec("DELETE FROM events")).rejects.toThrow(/append-only/);
        await expect(store.sql.exec("TRUNCATE events")).rejects.toThrow(/append-only/);
        expect(texts(await store.readStream(id))).toEqual(["keep me"]);
      });
    });

    describe("when the log is verified", () => {
      it("chains every appended event to its stream's event before it, so verify passes and seals up to the last as head", async () => {
        const fresh = await open({ fresh: true });
        try {
          const a = newStream();
          await fresh.append(a, [message("one")], { expectedVersion: "no_stream" });
          await fresh.append(a, [message("two"), message("three")], { expectedVersion: 1 });
          const { positions } = await fresh.append(newStream(), [message("four")], { expectedVersion: "any" });
          const { rows } = await fresh.sql.query<{ position: number; hash: string; linked: boolean }>(
            `SELECT global_position::int AS position, encode(hash, 'hex') AS hash,
                    hash = sha256(coalesce(lag(hash) OVER (PARTITION BY stream_id ORDER BY stream_version), '\\x${"00".repeat(32)}'::bytea) || ${ROW_ENCODING_SQL}) AS linked
               FROM events e ORDER BY global_position`,
          );
          expect(rows.map((r) => r.linked)).toEqual([true, true, true, true]);
          const result = await fresh.verify();
          expect(result).toMatchObject({
            ok: true,
            events: 4,
            problems: [],
            unchained: 0,
            lastPosition: positions[0],
            head: { position: positions[0] },
            unsealed: 0,
          });
          expect(result.head.hash).toMatch(/^[0-9a-f]{64}$/);
        } finally {
          await fresh.close();
        }
      });

      it("names a row written around the append (no hash) and a stream version gap, at their positions", async () => {
        const fresh = await open({ fresh: true });
        try {
          const id = newStream();
          await fresh.append(id, [message("one")], { expectedVersion: "no_stream" });
          const raw = await fresh.sql.query<{ global_position: string }>(INSERT_ROW, [
            randomUUID(),
            id,
            3,
            "MessageReceived",
            JSON.stringify({ runId: "run-1", text: "x", sender: "user" }),
          ]);
          const result = await fresh.verify();
          expect(result.ok).toBe(false);
          const at = Number(raw.rows[0]!.global_position);
          expect(result.problems).toEqual([
            { position: at, problem: expect.stringMatching(/has no hash/) },
            { position: at, problem: expect.stringMatching(new RegExp(`stream ${id} jumps from version 1 to 3`)) },
          ]);
        } finally {
          await fresh.close();
        }
      });
    });

    describe("when an event does not match its schema", () => {
      it("refuses the whole append with EventValidationError and writes nothing", async () => {
        const id = newStream();
        const head = await store.headPosition();
        const bad = {
          type: "MessageReceived",
          data: { runId: "run-1", text: 42, sender: "user" },
        } as unknown as NewEvent;
        const error = await store
          .append(id, [message("fine"), bad], { expectedVersion: "no_stream" })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EventValidationError);
        expect((error as EventValidationError).message).toMatch(/MessageReceived.*text/);
        await expect(
          store.append(id, [{ type: "NoSuchEvent", data: {} } as unknown as NewEvent], { expectedVersion: "any" }),
        ).rejects.toBeInstanceOf(EventValidationError);
        await expect(store.append(id, [message("x", "not-a-uuid")], { expectedVersion: "any" })).rejects.toBeInstanceOf(
          EventValidationError,
        );
        expect(await store.streamVersion(id)).toBe(0);
        expect(await store.headPosition()).toBe(head);
      });
    });

    describe("when a subscriber listens from a position", () => {
      it("gets the stored events, then each new one, in order and exactly once", async () => {
        const id = newStream();
        const head = await store.headPosition();
        await store.append(id, [message("s1"), message("s2")], { expectedVersion: "no_stream" });
        const seen: RecordedEvent[] = [];
        let inFlight = 0;
        let overlapped = false;
        const unsubscribe = store.subscribe(head, async (event) => {
          if (event.streamId !== id) return;
          inFlight += 1;
          if (inFlight > 1) overlapped = true;
          await new Promise((r) => setImmediate(r)); // a slow listener (it yields to the event loop): deliveries must not overlap
          seen.push(event);
          inFlight -= 1;
        });
        // Appends while the replay may still be running, then one by one.
        await store.append(id, [message("l1")], { expectedVersion: 2 });
        await store.append(id, [message("l2"), message("l3")], { expectedVersion: 3 });
        for (let v = 5; v <= 8; v++) await store.append(id, [message(`l${v - 1}`)], { expectedVersion: v });

        await vi.waitFor(() => expect(seen).toHaveLength(9), { timeout: 10_000 });
        expect(texts(seen)).toEqual(["s1", "s2", "l1", "l2", "l3", "l4", "l5", "l6", "l7"]);
        expect(seen.map((e) => e.streamVersion)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(overlapped).toBe(false);

        unsubscribe();
        // A subscriber of the same store that stays: once it has the event after the stop, the stopped one would too.
        const witnessed: RecordedEvent[] = [];
        const stopWitness = store.subscribe(head, (event) => {
          if (event.streamId === id) witnessed.push(event);
        });
        await store.append(id, [message("after")], { expectedVersion: 9 });
        await vi.waitFor(() => expect(texts(witnessed)).toContain("after"), { timeout: 10_000 });
        stopWitness();
        expect(seen).toHaveLength(9);
      });

      it("starts after the given position, skipping what came before", async () => {
        const id = newStream();
        const { positions } = await store.append(id, [message("old"), message("new")], {
          expectedVersion: "no_stream",
        });
        const seen: string[] = [];
        const unsubscribe = store.subscribe(positions[0]!, (e) => {
          if (e.streamId === id) seen.push(texts([e])[0]!);
        });
        await vi.waitFor(() => expect(seen).toEqual(["new"]));
        unsubscribe();
      });
    });

    describe("when the log holds a row that is not a valid event", () => {
      let broken: EventStore;
      const positions: number[] = [];
      beforeAll(async () => {
        broken = await open({ fresh: true });
        await broken.append("ctx-good", [message("good")], { expectedVersion: "no_stream" });
        for (const [type, data] of [
          ["NoSuchEvent", { x: 1 }],
          ["MessageReceived", { runId: "run-1", text: 7, sender: "user" }],
        ] as const) {
          const { rows } = await broken.sql.query<{ global_position: string | number }>(INSERT_ROW, [
            randomUUID(),
            `ctx-bad-${type}`,
            1,
            type,
            JSON.stringify(data),
          ]);
          positions.push(Number(rows[0]!.global_position));
        }
      });
      afterAll(async () => {
        await broken?.close();
      });

      it("fails to read it with EventDecodeError naming its global_position (unknown type)", async () => {
        const error = await broken.readAll(0, 10).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EventDecodeError);
        expect(error).toMatchObject({ globalPosition: positions[0], eventType: "NoSuchEvent" });
        expect((error as Error).message).toContain(`global_position ${positions[0]}`);
        expect((error as Error).message).toMatch(/unknown event type/);
      });

      it("fails to read it with EventDecodeError naming its global_position (bad data)", async () => {
        const error = await broken.readStream("ctx-bad-MessageReceived").catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EventDecodeError);
        expect(error).toMatchObject({ globalPosition: positions[1], eventType: "MessageReceived" });
        expect((error as Error).message).toMatch(new RegExp(`global_position ${positions[1]}.*text`));
      });

      it("still reads the valid rows around it", async () => {
        expect(texts(await broken.readStream("ctx-good"))).toEqual(["good"]);
        expect(texts(await broken.readAll(0, 1))).toEqual(["good"]);
      });
    });

    describe("when another client wrote a row with a time in microseconds, in its own time zone", () => {
      it("reads the same instant, to the millisecond, in whatever zone the reading session is", async () => {
        const id = newStream();
        await store.sql.transaction(async (tx) => {
          await tx.exec("SET LOCAL TIME ZONE 'Asia/Kolkata'");
          await tx.query(
            `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
             VALUES ($1, $2, 1, 'MessageReceived', 1, $3::jsonb, '{"correlationId":null,"causationId":null,"actor":null}'::jsonb,
                     '2030-01-02 05:34:05.678912+02'::timestamptz)`,
            [randomUUID(), id, JSON.stringify({ runId: "run-1", text: "1e400 ≠ Infinity", sender: "user" })],
          );
        });
        // A session setting: on PGlite's one connection the read below runs in this zone (a pool's may not).
        await store.sql.exec("SET TIME ZONE 'America/Los_Angeles'");
        const read = await store.readStream(id).finally(() => store.sql.exec("RESET TIME ZONE"));
        expect(read).toHaveLength(1);
        expect(read[0]!.recordedAt).toBe("2030-01-02T03:34:05.678Z");
        expect(texts(read)).toEqual(["1e400 ≠ Infinity"]);
      });
    });

    describe("when one session keeps appending while the log grows", () => {
      it("each append finds the stream's version and its last hash by index, never by reading the table", async () => {
        const s = await open({ fresh: true });
        try {
          const scans = await s.sql.transaction(async (tx) => {
            // The counters of this session's transaction so far (PostgreSQL may also hold a previous
            // transaction's there until it reports them): the test reads what the appends add.
            const counts = async () => {
              const row = (
                await tx.query<{ seq_scan: string | number; idx_scan: string | number }>(
                  `SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'events'`,
                )
              ).rows[0]!;
              return { seq: Number(row.seq_scan), idx: Number(row.idx_scan) };
            };
            const before = await counts();
            const append = async (stream: string, expected: number | "no_stream", text: string) => {
              const rows = appendRows(stream, [message(text)], expected);
              await tx.query(APPEND_SQL, [
                stream,
                encodeExpectedVersion(expected),
                JSON.stringify(rows),
                new Date().toISOString(),
              ]);
            };
            // PL/pgSQL plans the function's statements on its first calls, while the log is nearly
            // empty, and keeps those plans for the session; then the log grows under them.
            const stream = newStream();
            await append(stream, "no_stream", "first");
            for (let v = 1; v < 10; v++) await append(stream, v, `small ${v}`);
            await tx.query(
              `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
               SELECT gen_random_uuid(), 'bulk-' || (g / 100), g % 100 + 1, 'MessageReceived', 1,
                      '{"runId":"run-1","text":"bulk","sender":"user"}'::jsonb, '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now()
               FROM generate_series(0, 4999) AS g`,
            );
            for (let v = 10; v < 20; v++) await append(stream, v, `large ${v}`);
            const after = await counts();
            return { seq: after.seq - before.seq, idx: after.idx - before.idx };
          });
          expect(scans.seq).toBe(0);
          expect(scans.idx).toBeGreaterThanOrEqual(20); // the stream's version and last hash, one lookup each append
        } finally {
          await s.close();
        }
      });
    });

    describe("given a log of 100,000 events", () => {
      const COUNT = 100_000;
      let big: EventStore;
      beforeAll(async () => {
        big = await open({ fresh: true });
        // 1,000 streams of 100 events, each with ~300 characters of text, written in one statement.
        await big.sql.query(
          `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
           SELECT gen_random_uuid(), 'ctx-' || (g / 100), g % 100 + 1, 'MessageReceived', 1,
                  jsonb_build_object('runId', 'run-1', 'sender', 'user', 'text', g || ' ' || repeat('lorem ipsum ', 25)),
                  '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now()
           FROM generate_series(0, $1::int - 1) AS g`,
          [COUNT],
        );
      }, 120_000);
      afterAll(async () => {
        await big?.close();
      });

      it("reads one page at a time with readAll(after, limit)", async () => {
        const page = await big.readAll(500, 1000);
        expect(page).toHaveLength(1000);
        expect(page[0]!.globalPosition).toBe(501);
        expect(page[999]!.globalPosition).toBe(1500);
        expect(await big.readAll(COUNT - 10, 1000)).toHaveLength(10);
      });

      it("iterates the whole log in order with bounded memory", async () => {
        const collect = gc();
        collect();
        const baseline = process.memoryUsage().heapUsed;
        let peak = 0;
        let count = 0;
        let last = 0;
        let ordered = true;
        for await (const event of big.iterateAll(0, 1000)) {
          if (event.globalPosition <= last) ordered = false;
          last = event.globalPosition;
          count += 1;
          if (count % 10_000 === 0) {
            collect();
            peak = Math.max(peak, process.memoryUsage().heapUsed - baseline);
          }
        }
        expect(count).toBe(COUNT);
        expect(ordered).toBe(true);
        // The whole log decoded is well over 100 MB of heap; a page is a few MB.
        expect(peak).toBeLessThan(30 * 1024 * 1024);
      }, 120_000);
    });

    describe("when the store is closed", () => {
      it("refuses every call with StoreError closed, and closing again is harmless", async () => {
        const s = await open({ fresh: true });
        await s.close();
        await s.close();
        const calls: (() => Promise<unknown>)[] = [
          () => s.append(newStream(), [message("x")], { expectedVersion: "any" }),
          () => s.readAll(),
          () => s.readStream("x"),
          () => s.headPosition(),
          () => s.streamVersion("x"),
          () => s.sql.query("SELECT 1"),
        ];
        for (const call of calls) {
          const error = await Promise.resolve()
            .then(call)
            .catch((e: unknown) => e);
          expect(error).toBeInstanceOf(StoreError);
          expect(error).toMatchObject({ reason: "closed" });
        }
      });
    });
  });
};
