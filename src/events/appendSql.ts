// The one-round-trip append as SQL the adapters send: its statement with literals written in (one
// simple-protocol message), what `actorzero_append` answers, and the retry on a unique violation.
import { EXPECT_ANY, EXPECT_NO_STREAM } from "./sql.ts";

/** One append, one round trip: `$1` stream id, `$2` expected version (see EXPECT_*), `$3` events JSON, `$4` recorded_at. */
export const APPEND_SQL = `SELECT actorzero_append($1, $2, $3::jsonb, $4::timestamptz) AS result`;
/** What a literal cannot hold as it is: a backslash or a quote (escaped), or a NUL (refused). */
const LITERAL_ESCAPES = /[\\'\u0000]/;

/**
 * A text as an SQL literal: an escape string (E'…'), whose backslashes and quotes are escaped, so it
 * reads the same whatever standard_conforming_strings says. A NUL cannot be sent in a literal (nor as
 * a text parameter): refused.
 */
export const sqlLiteral = (text: string): string => {
  // One scan in the common case (an append's JSON seldom holds a quote or a backslash); escaping scans again.
  if (!LITERAL_ESCAPES.test(text)) return `E'${text}'`;
  if (text.includes("\u0000")) throw new RangeError("a NUL character cannot be sent to the database");
  return `E'${text.replace(/[\\']/g, "\\$&")}'`;
};

/**
 * APPEND_SQL with its parameters written in as literals: one simple-protocol message. PGlite answers a
 * parameterised query with five protocol messages (parse, describe, bind, execute, sync), each a trip
 * into its WebAssembly; one message costs about a fifth less CPU per append (measured on PGlite).
 */
export const appendStatement = (params: readonly unknown[]): string => {
  const [streamId, expected, events, recordedAt] = params as [string, number, string, string];
  if (!Number.isInteger(expected)) throw new RangeError(`expected version ${expected} is not an integer`);
  return `SELECT actorzero_append(${sqlLiteral(streamId)}, ${expected}, ${sqlLiteral(events)}::jsonb, ${sqlLiteral(recordedAt)}::timestamptz) AS result`;
};

/** `$1` stream id, `$2` event ids (uuid[]): the original outcome of an append of these ids, or null. */
export const FIND_APPENDED_SQL = `SELECT actorzero_find_appended($1, $2::uuid[]) AS result`;

/**
 * What `actorzero_append` returns. `stored`: the events were already in the log (an idempotent
 * re-append); a log whose functions predate the flag leaves it out, and then a version other than the
 * one a fresh append gives says the same.
 */
export type AppendOutcome =
  { positions: number[]; version: number; stored?: true; conflict?: undefined } | { conflict: true; version: number };

/** An event as `actorzero_append` takes it, in the JSON array of `$3`. */
export type AppendRow = { event_id: string; type: string; schema_version: number; data: unknown; metadata: unknown };

/** Runs one parameterised statement and returns its rows; each adapter supplies its driver's. */
export type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

const UNIQUE_VIOLATION = "23505";
const MAX_ATTEMPTS = 20;

/** Sends one append (APPEND_SQL's parameters, in its order) and returns its rows; each adapter sends it its own way. */
export type SendAppend = (params: unknown[]) => Promise<{ result: AppendOutcome }[]>;

/**
 * The append protocol, the same for every adapter: one round trip in the common case. When the
 * insert hits a unique violation (only when another writer raced us, or "any" re-appends stored
 * ids), the stored ids answer with their original positions, or the append is sent again — with a
 * fixed expected version the second call reports the conflict; with "any" it goes on top.
 */
export const runAppend = async (
  { send, query }: { send: SendAppend; query: Query },
  streamId: string,
  expectedVersion: number | "no_stream" | "any",
  rows: readonly AppendRow[],
  recordedAt: Date,
): Promise<AppendOutcome> => {
  const params = [streamId, encodeExpectedVersion(expectedVersion), JSON.stringify(rows), recordedAt.toISOString()];
  for (let attempt = 1; ; attempt++) {
    try {
      return (await send(params))[0]!.result;
    } catch (e) {
      if ((e as { code?: unknown }).code !== UNIQUE_VIOLATION || attempt >= MAX_ATTEMPTS) throw e;
    }
    const found = await query<{ result: AppendOutcome | null }>(FIND_APPENDED_SQL, [
      streamId,
      rows.map((r) => r.event_id),
    ]);
    if (found[0]?.result) return { ...found[0].result, stored: true } as AppendOutcome;
  }
};

/** The DB encoding of an expected version. */
export const encodeExpectedVersion = (expected: number | "no_stream" | "any"): number =>
  expected === "any" ? EXPECT_ANY : expected === "no_stream" ? EXPECT_NO_STREAM : expected;
