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
import { READ_BY_IDS_SQL } from "./sql.ts";
import { type AppendRow } from "./appendSql.ts";

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

/** `keys` (a fresh array) in JSONB's order. */
const jsonbOrdered = (keys: string[]): string[] => {
  if (keys.length < 2) return keys;
  const ascii = keys.every((k) => ASCII.test(k));
  const order = ascii ? asciiKeyOrder : jsonbKeyOrder;
  for (let i = 1; i < keys.length; i++) if (order(keys[i - 1]!, keys[i]!) > 0) return keys.sort(order);
  return keys;
};

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const omitted = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol";

/**
 * `value` as a JSONB column gives it back: JSON's rules (no undefined, no NaN, toJSON applied, -0 as
 * 0), every object's keys in JSONB's order, in a new value. One pass: this runs for every event an
 * append records, where a JSON round trip and a second pass to order the keys cost twice as much.
 */
export const asJsonb = (value: unknown): unknown => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value + 0 : null; // + 0 turns -0 into 0, as JSON text does
    case "bigint":
      throw new TypeError("Do not know how to serialize a BigInt"); // what JSON.stringify throws
    case "object":
      break;
    default:
      return null; // undefined, a function or a symbol: JSON.stringify gives nothing, the column null
  }
  if (value === null) return null;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return asJsonb((toJSON as () => unknown).call(value));
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return asJsonb(value.valueOf());
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = omitted(value[i]) ? null : asJsonb(value[i]);
    return out;
  }
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of jsonbOrdered(Object.keys(source))) {
    const v = source[k];
    if (omitted(v)) continue;
    // A "__proto__" key is data in JSON; plain assignment would set the prototype instead.
    if (k === "__proto__")
      Object.defineProperty(out, k, { value: asJsonb(v), enumerable: true, writable: true, configurable: true });
    else out[k] = asJsonb(v);
  }
  return out;
};

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
