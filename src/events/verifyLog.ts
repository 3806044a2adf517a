// Checks a whole event log against itself: the hash chain, stream versions, decodable rows, the append-only guard.
//
// Requirements:
// - Reads the log page by page in one REPEATABLE READ snapshot, never all of it in memory; writes nothing.
// - Recomputes each link from the rows with built-in functions in its own query (chainSql.ts): a function
//   stored in the checked database is never trusted.
// - Names the first bad position and what is wrong with it; keeps going to count the rest (up to a cap).
// - A database that is not an actorzero log (no schema, foreign columns) is a StoreError `refused`, not a
//   failed verification: there is nothing to verify.
// - An anchor ({position, hash} printed by an earlier verify) proves the log only grew since: the event
//   at that position still carries that hash, and the chain from there on is intact.
import { EventDecodeError, StoreError } from "./errors.ts";
import { GENESIS_HASH_HEX, ROW_ENCODING_SQL } from "./chainSql.ts";
import { type EventRow, verifyRow } from "./codec.ts";
import { EVENT_COLUMNS } from "./sql.ts";
import type { SqlExecutor } from "./store.ts";

/** A point of the log an auditor can keep outside it: a position and the hash the chain has there. */
export type LogAnchor = { position: number; hash: string };

/** What is wrong, and where (`position` null: the log as a whole, e.g. its append-only guard). */
export type LogProblem = { position: number | null; problem: string };

export type LogVerification = {
  ok: boolean;
  /** Events read. */
  events: number;
  /** The last event's position and hash (hash null when it is not chained); position 0 for an empty log. */
  head: { position: number; hash: string | null };
  /** Events at or below this position were written before the log had a chain (an upgraded log). */
  chainAfter: number;
  /** How many events predate the chain, so nothing proves them. */
  unchained: number;
  /** The anchor checked, when one was given. */
  since?: LogAnchor;
  /** The problems found, in log order (at most MAX_PROBLEMS): `problems[0]` is the first bad position. */
  problems: LogProblem[];
};

export type VerifyLogOptions = { since?: LogAnchor; pageSize?: number };

const MAX_PROBLEMS = 20;
const DEFAULT_PAGE = 1000;

/** Parses `<position>:<hash>` as `verify-log --print-head` prints it; undefined when it is not one. */
export const parseAnchor = (text: string): LogAnchor | undefined => {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/i.exec(text.trim());
  return m ? { position: Number(m[1]), hash: m[2]!.toLowerCase() } : undefined;
};

export const formatAnchor = (a: LogAnchor): string => `${a.position}:${a.hash}`;

type ChainRow = EventRow & { hash: string | null; expected: string };

/** Each row with its stored hash and the hash its link should have, given the previous row's stored hash. */
const PAGE_SQL = `
SELECT ${EVENT_COLUMNS}, encode(hash, 'hex') AS hash,
       encode(sha256(CASE WHEN row_number() OVER w = 1 THEN decode($3, 'hex')
                          ELSE coalesce(lag(hash) OVER w, decode('${GENESIS_HASH_HEX}', 'hex')) END || ${ROW_ENCODING_SQL}), 'hex') AS expected
  FROM (SELECT * FROM events WHERE global_position > $1 ORDER BY global_position LIMIT $2) e
  WINDOW w AS (ORDER BY global_position)
  ORDER BY global_position`;

const LEGACY_PAGE_SQL = `SELECT ${EVENT_COLUMNS}, NULL::text AS hash, '' AS expected FROM events WHERE global_position > $1 ORDER BY global_position LIMIT $2`;

const REQUIRED_COLUMNS = EVENT_COLUMNS.split(", ");

/** Verifies the log in `sql`'s database; see the header for what is checked. */
export const verifyEventLog = async (sql: SqlExecutor, options: VerifyLogOptions = {}): Promise<LogVerification> =>
  sql.transaction(async (tx) => {
    await tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const shape = await logShape(tx);
    const problems: LogProblem[] = [];
    const report = (position: number | null, problem: string) => {
      if (problems.length < MAX_PROBLEMS) problems.push({ position, problem });
    };
    if (!Number.isFinite(shape.chainAfter)) {
      report(null, "the record of where the chain starts (actorzero_chain) was deleted: every event is checked as chained");
      shape.chainAfter = 0;
    }
    if (shape.trigger !== "O") {
      report(null, shape.trigger === null
        ? "the append-only trigger actorzero_events_append_only is missing: rows can be changed without a trace in the database"
        : "the append-only trigger actorzero_events_append_only is disabled: rows can be changed without a trace in the database");
    }
    const pageSize = options.pageSize ?? DEFAULT_PAGE;
    const versions = new Map<string, number>();
    let events = 0;
    let unchained = 0;
    let head: LogVerification["head"] = { position: 0, hash: null };
    let sinceSeen = false;
    for (let after = 0; ; ) {
      const previous = head.hash ?? GENESIS_HASH_HEX;
      const { rows } = shape.chained
        ? await tx.query<ChainRow>(PAGE_SQL, [after, pageSize, previous])
        : await tx.query<ChainRow>(LEGACY_PAGE_SQL, [after, pageSize]);
      for (const row of rows) {
        const position = Number(row.global_position);
        events += 1;
        if (!shape.chained || position <= shape.chainAfter) {
          unchained += 1;
          if (row.hash !== null) report(position, `carries a hash but lies before the chain's start (after position ${shape.chainAfter}): the chain's start was moved`);
        } else if (row.hash === null) {
          report(position, "has no hash: it was written around the append (raw SQL), not chained");
        } else if (row.hash !== row.expected) {
          report(position, `its hash does not follow from the event before it: this event, or the one before it, was changed, or events between them were deleted or moved`);
        }
        checkVersion(versions, row, position, report);
        try {
          verifyRow(row);
        } catch (e) {
          report(position, e instanceof EventDecodeError ? `cannot be decoded: ${e.message.replace(/^Event at global_position \d+ /, "")}` : String(e));
        }
        if (options.since && position === options.since.position) {
          sinceSeen = true;
          if (row.hash !== options.since.hash) report(position, `its hash is ${row.hash ?? "absent"}, not the anchor's ${options.since.hash}: the log before the anchor was changed`);
        }
        head = { position, hash: row.hash };
      }
      if (rows.length < pageSize) break;
      after = head.position;
    }
    if (options.since && !sinceSeen) {
      report(options.since.position, options.since.position > head.position
        ? `the anchor's position is past the log's head (${head.position}): the log lost events since the anchor was taken`
        : "no event is at the anchor's position any more: it was deleted");
    }
    if (shape.handed < head.position) {
      report(head.position, `positions above the sequence (${shape.handed}): events were inserted with made-up positions`);
    }
    problems.sort(byPosition);
    return { ok: problems.length === 0, events, head, chainAfter: shape.chained ? shape.chainAfter : head.position, unchained, since: options.since, problems };
  });

/** Log order; problems of the log as a whole (no position) after the positioned ones. */
export const byPosition = (a: LogProblem, b: LogProblem): number =>
  a.position === b.position ? 0 : a.position === null ? 1 : b.position === null ? -1 : a.position - b.position;

/** Stream versions run 1, 2, 3… in log order: a gap, a repeat or a step back is a deleted, inserted or moved event. */
const checkVersion = (versions: Map<string, number>, row: EventRow, position: number, report: (p: number, s: string) => void) => {
  const last = versions.get(row.stream_id) ?? 0;
  const version = Number(row.stream_version);
  if (version !== last + 1) {
    report(position, last === 0
      ? `stream ${row.stream_id} starts at version ${version}, not 1: its first events are missing`
      : version <= last
        ? `stream ${row.stream_id} goes back from version ${last} to ${version}: events were moved`
        : `stream ${row.stream_id} jumps from version ${last} to ${version}: events are missing`);
  }
  versions.set(row.stream_id, Math.max(last, version));
};

type Shape = { chained: boolean; chainAfter: number; trigger: string | null; handed: number };

/** What the database holds: refuses one that is not an actorzero log; finds whether it has a chain yet. */
const logShape = async (tx: SqlExecutor): Promise<Shape> => {
  const { rows } = await tx.query<{ migrations: boolean; events: boolean; chain: boolean; columns: string[] | null }>(
    `SELECT to_regclass('actorzero_schema_migrations') IS NOT NULL AS migrations, to_regclass('events') IS NOT NULL AS events,
            to_regclass('actorzero_chain') IS NOT NULL AS chain,
            (SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = to_regclass('events') AND attnum > 0 AND NOT attisdropped) AS columns`,
  );
  const r = rows[0]!;
  if (!r.migrations || !r.events) {
    throw new StoreError("refused", `this database holds no actorzero event log (${r.events ? "an events table, but no actorzero_schema_migrations" : "no events table"})`);
  }
  const missing = REQUIRED_COLUMNS.filter((c) => !r.columns?.includes(c));
  if (missing.length > 0) throw new StoreError("refused", `the events table is not an actorzero event log: it lacks ${missing.join(", ")}`);
  const chained = r.chain && r.columns!.includes("hash");
  const chainAfter = chained
    ? Number((await tx.query<{ after: string | number }>("SELECT max(after_position) AS after FROM actorzero_chain")).rows[0]?.after ?? Number.NaN)
    : 0;
  const trigger = (await tx.query<{ enabled: string }>(
    "SELECT tgenabled::text AS enabled FROM pg_trigger WHERE tgrelid = 'events'::regclass AND tgname = 'actorzero_events_append_only'",
  )).rows[0]?.enabled ?? null;
  const handed = Number((await tx.query<{ handed: string | number | null }>(
    "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'global_position')::regclass), 0) AS handed",
  )).rows[0]?.handed ?? 0);
  return { chained, chainAfter, trigger, handed };
};
