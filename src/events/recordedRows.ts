// The rows an append recorded, as a read of them returns them: what the runtime applies is what the log holds.
//
// Requirements:
// - A fresh append's rows are built from what was sent (the encoded data and metadata, the schema
//   version, the recorded time the store passed) plus what the append function returned (positions,
//   the stream's version): no second round trip.
// - Data goes through what JSONB does to it (JSON text, keys ordered by length then bytes), so a
//   tool call's arguments render the same live as in a replay.
// - An idempotent re-append answers with the rows stored the first time, read back.
import { decodeRow, type EventRow } from "./codec.ts";
import type { RecordedEvent } from "./schema.ts";
import { type AppendRow, READ_BY_IDS_SQL } from "./sql.ts";

const ASCII = /^[\x00-\x7f]*$/;

/** JSONB's key order: shorter (in UTF-8 bytes) first, then bytewise. */
const jsonbKeyOrder = (a: string, b: string): number => {
  const la = Buffer.byteLength(a);
  const lb = Buffer.byteLength(b);
  if (la !== lb) return la - lb;
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
};

/** The same order for ASCII keys, where a UTF-16 unit is a byte: no Buffers. */
const asciiKeyOrder = (a: string, b: string): number => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/**
 * `value` (fresh from JSON.parse, so it may be changed in place) with every object's keys in JSONB's
 * order. Called for every event an append records, so it loops rather than allocating entry arrays.
 */
const orderKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = orderKeys(value[i]);
    return value;
  }
  if (value === null || typeof value !== "object") return value;
  const source = value as Record<string, unknown>;
  const keys = Object.keys(source);
  if (keys.length > 1) keys.sort(keys.every((k) => ASCII.test(k)) ? asciiKeyOrder : jsonbKeyOrder);
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const v = orderKeys(source[k]);
    // A "__proto__" key is data in JSON; plain assignment would set the prototype instead.
    if (k === "__proto__") Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
};

/** `value` as a JSONB column gives it back: JSON's rules (no undefined, no NaN, toJSON applied), JSONB's key order. */
export const asJsonb = (value: unknown): unknown => orderKeys(JSON.parse(JSON.stringify(value) ?? "null"));

/** The rows a fresh append wrote: `version` is the stream's version after it, `positions` in order. */
export const recordedRows = (
  streamId: string,
  rows: readonly AppendRow[],
  outcome: { positions: readonly (number | string)[]; version: number },
  recordedAt: Date,
): RecordedEvent[] => {
  const first = outcome.version - rows.length + 1;
  const at = recordedAt.toISOString();
  return rows.map((row, i) =>
    decodeRow({
      global_position: outcome.positions[i]!,
      event_id: row.event_id,
      stream_id: streamId,
      stream_version: first + i,
      type: row.type,
      schema_version: row.schema_version,
      data: asJsonb(row.data),
      metadata: asJsonb(row.metadata),
      recorded_at: at,
    } satisfies EventRow),
  );
};

/** Stored rows read back by event id, put in the order of `rows`. */
export const inSentOrder = (rows: readonly AppendRow[], stored: readonly EventRow[]): RecordedEvent[] => {
  const byId = new Map(stored.map((r) => [r.event_id, r]));
  return rows.map((row) => decodeRow(byId.get(row.event_id)!));
};

/**
 * The events an append with this outcome recorded: built for a fresh append, read back for a
 * re-append (`stored`, or a stream version a fresh append of these rows cannot give).
 */
export const appendedEvents = async (
  query: <R>(sql: string, params: unknown[]) => Promise<R[]>,
  streamId: string,
  expected: number | "no_stream" | "any",
  rows: readonly AppendRow[],
  outcome: { positions: readonly (number | string)[]; version: number; stored?: true },
  recordedAt: Date,
): Promise<RecordedEvent[]> => {
  const fresh = outcome.version === (typeof expected === "number" ? expected : 0) + rows.length;
  if (!outcome.stored && (expected === "any" || fresh)) return recordedRows(streamId, rows, outcome, recordedAt);
  return inSentOrder(rows, await query<EventRow>(READ_BY_IDS_SQL, [rows.map((r) => r.event_id)]));
};
