// The log's hash chain as SQL fragments: what an event's link is computed from, shared by the append and by verify.
//
// Requirements:
// - Each event row's `hash` = SHA-256(the hash of the previous event of its own stream ‖ the event's
//   canonical encoding); a stream's first event (and one after an unchained row) links to GENESIS, 32
//   zero bytes. Events of a log upgraded from schema 5, at or below actorzero_stream_chains.after_position,
//   keep their link to the previous row of the whole log (the chain of schema 2 to 5).
// - Seals (sealSql.ts) link the stream chains into one chain over the whole log, in position order.
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
 * The advisory lock a sealer tries (pg_try_advisory_xact_lock): one seal at a time; a process that
 * finds it taken skips its turn. Appends never take it.
 */
export const SEAL_LOCK_KEY = "27437640112499055";

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

/** The encoding of a stored row of `events` (aliased `e`); the attacker's view in the tamper tests too. */
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
