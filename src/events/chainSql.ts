// The log's hash chain as SQL fragments: what an event's link is computed from, shared by the append and by verify.
//
// Requirements:
// - Each event row's `hash` = SHA-256(the previous row's hash ‖ the event's canonical encoding); the
//   first chained event (and one after an unchained row) links to GENESIS, 32 zero bytes.
// - The encoding is unambiguous and the same on every PostgreSQL (15 and later, PGlite): a JSON array
//   [position, stream, version, type, schema version, data, metadata, recorded time in µs since the
//   epoch], as jsonb prints it (jsonb's text form is canonical: key order, spacing and numbers are fixed
//   by the stored value, not by how the client wrote it), in UTF-8.
// - Only built-in functions (sha256, jsonb_build_array, convert_to, extract): verify recomputes the
//   chain from its own query text and never trusts a function stored in the database it checks.

/** The hash the first chained event links to. */
export const GENESIS_HASH_HEX = "00".repeat(32);
export const GENESIS_HASH_SQL = `'\\x${GENESIS_HASH_HEX}'::bytea`;

/**
 * The advisory lock every append takes and holds until its transaction ends ("azchain" in ASCII): the
 * order appends take it is the chain's order and their commit order.
 */
export const CHAIN_LOCK_KEY = "27437640112499054";

/** SQL expressions (column names or PL/pgSQL variables) for the encoded fields of one event. */
export type EncodingColumns = {
  position: string;
  stream: string;
  version: string;
  type: string;
  schemaVersion: string;
  data: string;
  metadata: string;
  recordedAt: string;
};

/** The SQL expression of an event's canonical encoding (bytea). */
export const eventEncodingSql = (c: EncodingColumns): string =>
  `convert_to(jsonb_build_array((${c.position})::bigint, (${c.stream})::text, (${c.version})::integer, (${c.type})::text, ` +
  `(${c.schemaVersion})::integer, (${c.data})::jsonb, (${c.metadata})::jsonb, ` +
  `(extract(epoch FROM (${c.recordedAt})::timestamptz) * 1000000)::bigint)::text, 'UTF8')`;

/** The encoding of a stored row of `events` (aliased `e`). */
export const ROW_ENCODING_SQL = eventEncodingSql({
  position: "e.global_position",
  stream: "e.stream_id",
  version: "e.stream_version",
  type: "e.type",
  schemaVersion: "e.schema_version",
  data: "e.data",
  metadata: "e.metadata",
  recordedAt: "e.recorded_at",
});
