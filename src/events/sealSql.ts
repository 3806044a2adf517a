// The seals: one chain over the whole log, in position order, built behind the appends, as plain SQL (schema 6).
//
// Requirements:
// - Appends chain each event to the previous event of its own stream only (sql.ts), so appends to
//   different streams never wait for each other. What a per-stream chain cannot see alone — a stream's
//   last events deleted, a whole stream deleted, a row inserted with a made-up position — the seals see.
// - A seal covers the events after the previous seal up to `up_to`, all of them committed for good (the
//   caller passes a settled horizon: no transaction can still commit an event at or below it):
//     hash = SHA-256(previous seal's hash, or GENESIS ‖ int8(up_to) ‖ for each event in position order:
//                    int8(position) ‖ its hash (nothing for an unchained event))
//   int8 is PostgreSQL's int8send, 8 bytes big-endian. verify recomputes it in its own code.
// - One sealer at a time (pg_try_advisory_xact_lock): a process that finds the lock taken skips; any
//   process may seal, none must. A seal holds at most SEAL_MAX_EVENTS events; the caller repeats while
//   the answer says `more`.
// - actorzero_seals is append-only like events. actorzero_verified keeps the last seal an open (or a
//   verify of a writable store) found intact: the next open checks only what came after it.
import { GENESIS_HASH_SQL, SEAL_LOCK_KEY } from "./chainSql.ts";

/** The most events one seal covers (its body is 40 bytes an event, hashed in one call). */
export const SEAL_MAX_EVENTS = 10_000;

/** Part of SCHEMA_SQL: runs after the events table and actorzero_chain exist, in the same transaction. */
export const SEAL_SCHEMA_SQL = `
-- Version 6: events after after_position chain to their stream's previous event; those at or below it
-- (a log written by schema 2 to 5) keep the chain of the whole log. The ALTER TABLE of events above
-- waited for every insert in flight, so the sequence read here is past every position they hold.
-- A table of its own, not a column of actorzero_chain: altering a table that open's check reads, while
-- that check waits for events, would deadlock two processes opening a new log at once.
CREATE TABLE IF NOT EXISTS actorzero_stream_chains (
  one            BOOLEAN     PRIMARY KEY DEFAULT true CHECK (one),
  after_position BIGINT      NOT NULL,
  started_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO actorzero_stream_chains (after_position)
  VALUES (coalesce(pg_sequence_last_value('events_global_position_seq'::regclass), 0))
  ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS actorzero_seals (
  up_to     BIGINT      PRIMARY KEY,
  events    INTEGER     NOT NULL,
  hash      BYTEA       NOT NULL,
  sealed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
DROP TRIGGER IF EXISTS actorzero_seals_append_only ON actorzero_seals;
CREATE TRIGGER actorzero_seals_append_only
  BEFORE UPDATE OR DELETE OR TRUNCATE ON actorzero_seals
  FOR EACH STATEMENT EXECUTE FUNCTION actorzero_refuse_change();

CREATE TABLE IF NOT EXISTS actorzero_verified (
  one         BOOLEAN     PRIMARY KEY DEFAULT true CHECK (one),
  up_to       BIGINT      NOT NULL,
  hash        BYTEA       NOT NULL,
  verified_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Seals the committed events after the last seal, up to p_up_to (which the caller knows is settled),
-- at most ${SEAL_MAX_EVENTS} of them. NULL when another sealer holds the lock; else {up_to, sealed, more}.
CREATE OR REPLACE FUNCTION actorzero_seal(p_up_to BIGINT) RETURNS JSONB
LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
DECLARE
  v_last BIGINT;
  v_prev BYTEA;
  v_up_to BIGINT;
  v_count INTEGER;
  v_body BYTEA;
BEGIN
  IF NOT pg_try_advisory_xact_lock(${SEAL_LOCK_KEY}) THEN
    RETURN NULL;
  END IF;
  SELECT up_to, hash INTO v_last, v_prev FROM actorzero_seals ORDER BY up_to DESC LIMIT 1;
  v_last := coalesce(v_last, 0);
  SELECT max(s.global_position), count(*),
         string_agg(int8send(s.global_position) || coalesce(s.hash, ''::bytea), ''::bytea ORDER BY s.global_position)
    INTO v_up_to, v_count, v_body
    FROM (SELECT global_position, hash FROM events WHERE global_position > v_last AND global_position <= p_up_to
           ORDER BY global_position LIMIT ${SEAL_MAX_EVENTS}) s;
  IF v_count = 0 THEN
    RETURN jsonb_build_object('up_to', v_last, 'sealed', 0, 'more', false);
  END IF;
  INSERT INTO actorzero_seals (up_to, events, hash)
    VALUES (v_up_to, v_count, sha256(coalesce(v_prev, ${GENESIS_HASH_SQL}) || int8send(v_up_to) || v_body));
  RETURN jsonb_build_object('up_to', v_up_to, 'sealed', v_count, 'more', v_count = ${SEAL_MAX_EVENTS} AND v_up_to < p_up_to);
END
$fn$;
`;

/** `$1`: a settled position. See actorzero_seal. */
export const SEAL_SQL = `SELECT actorzero_seal($1::bigint) AS seal`;
export type SealOutcome = { up_to: number; sealed: number; more: boolean } | null;

/** The last seal an open found intact (none: check from the start). */
export const VERIFIED_SQL = `SELECT up_to, encode(hash, 'hex') AS hash FROM actorzero_verified`;
/** Records `$1` up_to, `$2` hash (hex) as verified, unless a later seal already is. */
export const RECORD_VERIFIED_SQL = `
INSERT INTO actorzero_verified (up_to, hash) VALUES ($1, decode($2, 'hex'))
ON CONFLICT (one) DO UPDATE SET up_to = EXCLUDED.up_to, hash = EXCLUDED.hash, verified_at = now()
  WHERE actorzero_verified.up_to < EXCLUDED.up_to`;
