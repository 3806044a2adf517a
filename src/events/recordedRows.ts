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

const byteLength = (s: string): number => (/^[\x00-\x7f]*$/.test(s) ? s.length : Buffer.byteLength(s));

/** JSONB's key order: shorter (in UTF-8 bytes) first, then bytewise. */
const jsonbKeyOrder = (a: string, b: string): number => {
  const la = byteLength(a);
  const lb = byteLength(b);
  if (la !== lb) return la - lb;
  if (la === a.length && lb === b.length) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
};

const orderKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(orderKeys);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value).sort(jsonbKeyOrder);
  return Object.fromEntries(keys.map((k) => [k, orderKeys((value as Record<string, unknown>)[k])]));
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
