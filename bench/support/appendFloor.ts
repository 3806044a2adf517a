// The true floor of a workload's writes: the events the runtime recorded, appended again as the product sends
// them (one `SELECT actorzero_append(…)` statement per append, its arguments written in as literals, one
// simple-protocol message each), to a log of their own, with none of the runtime's work around them.
//
// - PGlite: a second in-memory PGlite started as the store starts one (the same image, settings and
//   compiled module), each statement sent through the store's own raw message path (execRaw).
// - PostgreSQL: another database of the same server, each statement sent as the store's append lanes send
//   it (a query without parameters: pg's simple protocol, one implicit transaction).
// The events are encoded (fresh ids, new stream ids) before the clock starts; serialising them and writing
// the statement are timed, as the product pays for both on every append.
import { randomUUID } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import { appendRows } from "../../src/events/appendRows.ts";
import { pgliteImageFs, pgliteStartParams } from "../../src/events/pgliteImage.ts";
import { execRaw } from "../../src/events/pgliteRawExec.ts";
import { pgliteWasmModule } from "../../src/events/pgliteWasm.ts";
import {
  type AppendOutcome,
  type AppendRow,
  appendStatement,
  encodeExpectedVersion,
} from "../../src/events/appendSql.ts";
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import type { RecordedAppend } from "./recordingStore.ts";

/** Sends one statement as one simple-protocol message; its first result's rows. */
export type SendStatement = (sql: string) => Promise<unknown[]>;

export type Floor = { send: SendStatement; close: () => Promise<void> };

/** An in-memory PGlite of its own, as openPgliteStore starts one, written to through execRaw. */
export const pgliteFloor = async (): Promise<Floor> => {
  const db = await PGlite.create({
    fs: await pgliteImageFs(),
    startParams: pgliteStartParams(),
    pgliteWasmModule: pgliteWasmModule(),
  });
  return { send: async (sql) => (await execRaw(db, sql))[0]!.rows, close: () => db.close() };
};

/** A PostgreSQL store's database, written to as its append lanes write (no parameters: the simple protocol). */
export const postgresFloor = (store: EventStore): Floor => ({
  send: async (sql) => (await store.sql.query(sql)).rows,
  close: () => store.close(),
});

type Prepared = { streamId: string; expected: number | "no_stream"; rows: AppendRow[] };

/**
 * The recorded appends with new stream ids (the same runtime stream always maps to the same floor stream in
 * `streams`, so a long conversation stays one stream) and fresh event ids, encoded as the store encodes them.
 */
export const prepareFloor = (
  appends: readonly RecordedAppend[],
  streams: Map<string, { id: string; version: number }>,
): Prepared[] =>
  appends.map((a) => {
    let s = streams.get(a.streamId);
    if (!s) streams.set(a.streamId, (s = { id: randomUUID(), version: 0 }));
    const expected = s.version === 0 ? ("no_stream" as const) : s.version;
    const events = a.events.map(({ eventId: _fresh, ...e }) => e as NewEvent);
    s.version += events.length;
    return { streamId: s.id, expected, rows: appendRows(s.id, events, expected) };
  });

/** Sends the prepared appends one after the other, one statement each; refuses an append that did not land. */
export const sendFloor = async (send: SendStatement, prepared: readonly Prepared[]): Promise<void> => {
  for (const p of prepared) {
    const statement = appendStatement([
      p.streamId,
      encodeExpectedVersion(p.expected),
      JSON.stringify(p.rows),
      new Date().toISOString(),
    ]);
    const [row] = (await send(statement)) as { result: AppendOutcome }[];
    if (!row || row.result.conflict)
      throw new Error(`the floor's append to ${p.streamId} at ${p.expected} did not land: ${JSON.stringify(row)}`);
  }
};
