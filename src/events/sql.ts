// The event log's schema and its reads, as plain SQL shared by every Postgres adapter (DESIGN §3); the append statement is in appendSql.ts.
//
// Written for PostgreSQL 15 and later (PGlite is PostgreSQL 18): nothing here may use a newer feature.

import { GENESIS_HASH_SQL, eventEncodingSql } from "./chainSql.ts";
import { SEAL_SCHEMA_SQL } from "./sealSql.ts";

/**
 * The schema version this code writes and expects; a database at a higher version is refused.
 * 2: every event row carries `hash`, its link in the log's hash chain (see chainSql.ts).
 * 3: actorzero_append looks up the stream version and the chain head by index, whatever the size of
 *    the log when its plans were cached (see the function).
 * 4: actorzero_append no longer returns the appended events' hashes: nothing read them, and building
 *    them cost about 4% of a one-event append on PGlite.
 * 5: no INSERT trigger on events: actorzero_append takes its transaction id and notifies itself, and
 *    notifies only where a process may listen (see NOTIFY_SETTING). The trigger's mere presence cost
 *    every append's INSERT about 6% on PGlite, even when its WHEN clause skipped it.
 * 6: no global chain lock: each event chains to its stream's previous event, and seals link the log
 *    in position order behind the appends (sealSql.ts); actorzero_verified records what open checked.
 */
export const SCHEMA_VERSION = 6;

/** `expectedVersion` as the append function takes it: -1 = `no_stream`, -2 = `any`, n ≥ 0 = that version. */
export const EXPECT_NO_STREAM = -1;
export const EXPECT_ANY = -2;

/** The channel every append notifies on commit. */
export const NOTIFY_CHANNEL = "actorzero_events";
/**
 * A setting that, when 'off', spares appends their notification: a PGlite log is held by one process,
 * whose store tells its own subscribers, and nothing LISTENs. Unset (a PostgreSQL server) means on.
 */
export const NOTIFY_SETTING = "actorzero.notify_appends";

/** SQLSTATE raised when an append re-uses event ids that are stored differently (another stream, or only some of them). */
export const SQLSTATE_EVENT_ID_REUSED = "AZ001";
/** SQLSTATE raised when the database holds a newer schema than this code knows. */
export const SQLSTATE_SCHEMA_TOO_NEW = "AZ002";
/** SQLSTATE raised by the append-only trigger. */
export const SQLSTATE_APPEND_ONLY = "AZ003";

/** Whether the schema was ever created (a table that does not exist cannot be named in one query with it). */
export const SCHEMA_EXISTS_QUERY = `SELECT to_regclass('actorzero_schema_migrations') IS NOT NULL AS exists`;
/** The stored schema version; ask only when SCHEMA_EXISTS_QUERY says yes. */
export const SCHEMA_VERSION_QUERY = `SELECT max(version) AS version FROM actorzero_schema_migrations`;

/**
 * Serialises every CREATE … IF NOT EXISTS of this product (the log's schema, the projections' tables, the
 * lease table) across processes: two sessions creating the same table at once both pass the "not exists"
 * check and the second fails on the catalog's unique index (pg_type_typname_nsp_index). The first
 * statement of a message that creates; held until that message's implicit transaction ends.
 */
export const DDL_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('actorzero_schema'))";

/**
 * Creates or completes the schema; idempotent. Send it as ONE simple-protocol message (PGlite's
 * `exec`, pg's `query` without params): PostgreSQL then runs it as one implicit transaction, and the
 * advisory lock serialises processes that create the schema at the same moment.
 */
export const SCHEMA_SQL = `
${DDL_LOCK_SQL};

CREATE TABLE IF NOT EXISTS actorzero_schema_migrations (
  version    INTEGER     PRIMARY KEY,
  applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

DO $check$
BEGIN
  IF (SELECT max(version) FROM actorzero_schema_migrations) > ${SCHEMA_VERSION} THEN
    RAISE EXCEPTION 'the event log schema is at version %, newer than this runtime knows (${SCHEMA_VERSION})',
      (SELECT max(version) FROM actorzero_schema_migrations)
      USING ERRCODE = '${SQLSTATE_SCHEMA_TOO_NEW}';
  END IF;
END
$check$;

CREATE TABLE IF NOT EXISTS events (
  global_position BIGSERIAL PRIMARY KEY,
  event_id        UUID        NOT NULL UNIQUE,
  stream_id       TEXT        NOT NULL,
  stream_version  INTEGER     NOT NULL,
  type            TEXT        NOT NULL,
  schema_version  SMALLINT    NOT NULL,
  data            JSONB       NOT NULL,
  metadata        JSONB       NOT NULL,
  recorded_at     TIMESTAMPTZ NOT NULL,
  UNIQUE (stream_id, stream_version)
);

-- The append draws positions from this sequence by name (see actorzero_append): make sure it is the one
-- the column's default uses, or refuse the schema here rather than hand out positions from another.
DO $sequence$
BEGIN
  IF pg_get_serial_sequence('events', 'global_position')::regclass IS DISTINCT FROM to_regclass('events_global_position_seq') THEN
    RAISE EXCEPTION 'events.global_position draws from %, not events_global_position_seq', pg_get_serial_sequence('events', 'global_position');
  END IF;
END
$sequence$;

-- Version 2: the hash chain. Adding a nullable column is a catalog change, however long the log;
-- the rows already there keep a NULL hash. The ALTER waits for every insert in flight, so the
-- sequence read below is past every position handed out before the chain existed.
ALTER TABLE events ADD COLUMN IF NOT EXISTS hash BYTEA;

-- Where the chain starts: events at or below after_position were written before it existed (a log
-- upgraded from version 1); every later one is chained. One row, written once.
CREATE TABLE IF NOT EXISTS actorzero_chain (
  one            BOOLEAN     PRIMARY KEY DEFAULT true CHECK (one),
  after_position BIGINT      NOT NULL,
  started_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO actorzero_chain (after_position)
  VALUES (coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'global_position')::regclass), 0))
  ON CONFLICT DO NOTHING;

-- The log is append-only for every client, not just ours. A statement trigger also fires when no
-- row matches, so "DELETE FROM events" on an empty log is refused too.
CREATE OR REPLACE FUNCTION actorzero_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION '% is append-only: % is refused', TG_TABLE_NAME, TG_OP USING ERRCODE = '${SQLSTATE_APPEND_ONLY}';
END
$fn$;

DROP TRIGGER IF EXISTS actorzero_events_append_only ON events;
CREATE TRIGGER actorzero_events_append_only
  BEFORE UPDATE OR DELETE OR TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION actorzero_refuse_change();

${SEAL_SCHEMA_SQL}

-- Until version 5 a statement trigger gave every INSERT a transaction id and a notification; the
-- append function does both now (events are written by it alone: a row inserted around it breaks the
-- chain, which verify reports), and a trigger on events cost each append's INSERT even when skipped.
DROP TRIGGER IF EXISTS actorzero_events_before_insert ON events;
DROP FUNCTION IF EXISTS actorzero_before_insert();

-- How far a live reader may read without skipping an event that commits out of order. BIGSERIAL
-- positions are taken at insert, but transactions commit in any order: position 12 may be visible
-- while 11 is not yet. Reads the highest position handed out so far, THEN takes a transaction id as
-- a fence: every transaction holding a position up to "handed" got its xid before (actorzero_append),
-- so it is older than the fence. "settled" says whether every transaction older than the fence has
-- ended by now (committed or rolled back), i.e. every position up to "handed" is final;
-- "candidate_settled" says the same for the fence p_candidate_xid of an earlier call. Each statement
-- of this (volatile) function reads a fresh snapshot, which the order of the steps depends on.
CREATE OR REPLACE FUNCTION actorzero_log_horizon(p_candidate_xid xid8) RETURNS JSONB
LANGUAGE plpgsql AS $fn$
DECLARE
  v_handed BIGINT;
  v_fence xid8;
  v_snapshot pg_snapshot;
BEGIN
  v_handed := coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'global_position')::regclass), 0);
  v_fence := pg_current_xact_id();
  v_snapshot := pg_current_snapshot();
  RETURN jsonb_build_object(
    'handed', v_handed,
    'fence', v_fence::text,
    'settled', pg_snapshot_xmax(v_snapshot) >= v_fence
      AND NOT EXISTS (SELECT 1 FROM pg_snapshot_xip(v_snapshot) AS x WHERE x < v_fence),
    'candidate_settled', p_candidate_xid IS NOT NULL AND pg_snapshot_xmax(v_snapshot) >= p_candidate_xid
      AND NOT EXISTS (SELECT 1 FROM pg_snapshot_xip(v_snapshot) AS x WHERE x < p_candidate_xid));
END
$fn$;

-- The positions and stream version of events already stored under these ids, in the given order,
-- marked "stored" (the caller reads those rows back); NULL when none is stored; raises when only
-- some are, or when they belong to another stream.
CREATE OR REPLACE FUNCTION actorzero_find_appended(p_stream_id TEXT, p_ids UUID[]) RETURNS JSONB
LANGUAGE plpgsql AS $fn$
DECLARE
  v_found INTEGER;
  v_other INTEGER;
  v_positions BIGINT[];
  v_version INTEGER;
BEGIN
  SELECT count(*), count(*) FILTER (WHERE e.stream_id <> p_stream_id),
         array_agg(e.global_position ORDER BY i.ord), max(e.stream_version)
    INTO v_found, v_other, v_positions, v_version
    FROM unnest(p_ids) WITH ORDINALITY AS i(id, ord)
    JOIN events e ON e.event_id = i.id;
  IF v_found = 0 THEN
    RETURN NULL;
  END IF;
  IF v_found <> cardinality(p_ids) OR v_other > 0 THEN
    RAISE EXCEPTION 'append to stream ''%'' re-uses event ids that are stored % (% of its % events)', p_stream_id,
      CASE WHEN v_other > 0 THEN 'in another stream' ELSE 'for only some' END, v_found, cardinality(p_ids)
      USING ERRCODE = '${SQLSTATE_EVENT_ID_REUSED}';
  END IF;
  RETURN jsonb_build_object('positions', to_jsonb(v_positions), 'version', v_version, 'stored', true);
END
$fn$;

-- Appends p_events (a JSON array of {event_id, type, schema_version, data, metadata}) to a stream in
-- one statement. Returns {"positions": [...], "version": n} on success, and for an
-- idempotent re-append the original positions; {"conflict": true, "version": actual} when the stream
-- is not at p_expected_version. A unique violation ("any" re-appends stored ids) is raised as is:
-- the caller resolves it with actorzero_find_appended and calls again (see runAppend).
--
-- The hash chain: each event's hash is sha256(hash of its stream's event before it ‖ its canonical
-- encoding). Appends to one stream take the stream's advisory lock (until this transaction ends), so
-- they run one after the other: each reads the version and hash its predecessor committed, and takes
-- its positions after it (no retry, no position burnt on a lost race). Appends to other streams never
-- wait: positions may commit out of order, which readers handle with the settled horizon, and the
-- seals (sealSql.ts) link the whole log in position order once it has settled.
--
-- enable_seqscan is off inside: PL/pgSQL plans its statements once per session and keeps them, and a
-- plan made while the log was small (a new log, or PGlite's image, where nothing re-analyses the
-- table) reads the whole events table and sorts it for each lookup below, so every append got
-- slower as the log grew. With it off, both lookups are backward index scans at any size.
CREATE OR REPLACE FUNCTION actorzero_append(
  p_stream_id TEXT, p_expected_version INTEGER, p_events JSONB, p_recorded_at TIMESTAMPTZ
) RETURNS JSONB LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
DECLARE
  v_current INTEGER;
  v_event JSONB;
  v_count INTEGER := jsonb_array_length(p_events);
  v_position BIGINT;
  v_positions BIGINT[] := '{}';
  v_hash BYTEA;
  v_hashes BYTEA[] := '{}';
  -- By name, checked once when the schema is made: pg_get_serial_sequence here cost each append a
  -- catalog scan, a tenth of the function's time.
  v_sequence REGCLASS := 'events_global_position_seq'::regclass;
BEGIN
  -- An xid before the first nextval below: actorzero_log_horizon relies on every transaction holding a
  -- position being older than its fence.
  PERFORM pg_current_xact_id();
  PERFORM pg_advisory_xact_lock(hashtextextended(p_stream_id, 0));
  -- A backward scan of the (stream_id, stream_version) index: the cost does not grow with the stream.
  -- Its hash is the link of this append's first event (an unchained one starts a new link).
  SELECT stream_version, hash INTO v_current, v_hash FROM events
    WHERE stream_id = p_stream_id ORDER BY stream_version DESC LIMIT 1;
  v_current := coalesce(v_current, 0);
  IF p_expected_version <> ${EXPECT_ANY} AND v_current <> greatest(p_expected_version, 0) THEN
    -- Not at the expected version: a retried append whose events are stored, or a real conflict.
    RETURN coalesce(
      actorzero_find_appended(p_stream_id, ARRAY(SELECT (e->>'event_id')::uuid FROM jsonb_array_elements(p_events) AS x(e))),
      jsonb_build_object('conflict', true, 'version', v_current));
  END IF;
  -- Live readers of other processes wake when this append commits (NOTIFY_SETTING: unless none can listen).
  IF current_setting('${NOTIFY_SETTING}', true) IS DISTINCT FROM 'off' THEN
    PERFORM pg_notify('${NOTIFY_CHANNEL}', '');
  END IF;
  v_hash := coalesce(v_hash, ${GENESIS_HASH_SQL});
  IF v_count = 1 THEN
    -- The common case: one INSERT of values, cheaper than the set-returning path below.
    v_event := p_events->0;
    v_position := nextval(v_sequence);
    v_hash := sha256(v_hash || ${eventEncodingSql({
      position: "v_position",
      stream: "p_stream_id",
      version: "v_current + 1",
      type: "v_event->>'type'",
      schemaVersion: "(v_event->>'schema_version')::smallint",
      data: "v_event->'data'",
      metadata: "v_event->'metadata'",
      recordedAt: "p_recorded_at",
    })});
    INSERT INTO events (global_position, event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at, hash)
      VALUES (v_position, (v_event->>'event_id')::uuid, p_stream_id, v_current + 1, v_event->>'type',
              (v_event->>'schema_version')::smallint, v_event->'data', v_event->'metadata', p_recorded_at, v_hash);
    RETURN jsonb_build_object('positions', jsonb_build_array(v_position), 'version', v_current + 1);
  END IF;
  -- Each hash depends on the one before: computed in order here, then one INSERT writes them all.
  FOR i IN 0 .. v_count - 1 LOOP
    v_event := p_events->i;
    v_position := nextval(v_sequence);
    v_hash := sha256(v_hash || ${eventEncodingSql({
      position: "v_position",
      stream: "p_stream_id",
      version: "v_current + 1 + i",
      type: "v_event->>'type'",
      schemaVersion: "(v_event->>'schema_version')::smallint",
      data: "v_event->'data'",
      metadata: "v_event->'metadata'",
      recordedAt: "p_recorded_at",
    })});
    v_positions := v_positions || v_position;
    v_hashes := v_hashes || v_hash;
  END LOOP;
  INSERT INTO events (global_position, event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at, hash)
  SELECT v_positions[x.ord], x.event_id, p_stream_id, v_current + x.ord::int, x.type, x.schema_version, x.data, x.metadata,
         p_recorded_at, v_hashes[x.ord]
    FROM ROWS FROM (jsonb_to_recordset(p_events)
           AS (event_id UUID, type TEXT, schema_version SMALLINT, data JSONB, metadata JSONB))
         WITH ORDINALITY AS x(event_id, type, schema_version, data, metadata, ord)
    ORDER BY x.ord;
  RETURN jsonb_build_object('positions', to_jsonb(v_positions), 'version', v_current + v_count);
END
$fn$;

INSERT INTO actorzero_schema_migrations (version) VALUES (${SCHEMA_VERSION}) ON CONFLICT DO NOTHING;
`;

/** `$1`: the fence of an earlier call still waiting to settle, or null. See actorzero_log_horizon. */
export const LOG_HORIZON_SQL = `SELECT actorzero_log_horizon($1::xid8) AS horizon`;
/** What actorzero_log_horizon returns. */
export type LogHorizon = { handed: number | string; fence: string; settled: boolean; candidate_settled: boolean };

/** The columns every reader selects, in the shape `decodeRow` takes. */
export const EVENT_COLUMNS =
  "global_position, event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at";

/**
 * The same columns as one JSON array in one text column (`eventRowOf` in codec.ts reads it back). PGlite
 * then parses one string per row, not nine columns one by one: a page reads in about half the CPU, and
 * that parse was half of a rebuild's time. A PostgreSQL server builds the JSON on its own core, which
 * costs it more wall time than the client saves, so that adapter reads the columns.
 */
export const EVENT_ROW_JSON = `json_build_array(${EVENT_COLUMNS})::text AS row`;

/** `$1` stream id, `$2` from version: the stream's events in order, selecting `select`. */
export const readStreamSql = (select: string) =>
  `SELECT ${select} FROM events WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version`;
/** `$1` after position, `$2` at most: the log's events in order, selecting `select`. */
export const readAllSql = (select: string) =>
  `SELECT ${select} FROM events WHERE global_position > $1 ORDER BY global_position LIMIT $2`;

/** Events after `$1` up to and including position `$2`, at most `$3`. */
export const READ_RANGE_SQL = `SELECT ${EVENT_COLUMNS} FROM events WHERE global_position > $1 AND global_position <= $2 ORDER BY global_position LIMIT $3`;
/** READ_RANGE_SQL without the positions `$4` (bigint[]). */
export const READ_RANGE_EXCEPT_SQL = `SELECT ${EVENT_COLUMNS} FROM events WHERE global_position > $1 AND global_position <= $2 AND global_position <> ALL($4::bigint[]) ORDER BY global_position LIMIT $3`;
export const STREAM_VERSION_SQL = `SELECT coalesce(max(stream_version), 0) AS version FROM events WHERE stream_id = $1`;
export const HEAD_POSITION_SQL = `SELECT coalesce(max(global_position), 0) AS position FROM events`;

/** Stored events by id (`$1` uuid[]): what an idempotent re-append answers with. */
export const READ_BY_IDS_SQL = `SELECT ${EVENT_COLUMNS} FROM events WHERE event_id = ANY($1::uuid[])`;
