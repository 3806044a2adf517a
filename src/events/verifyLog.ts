// Checks an event log against itself: the stream chains and the seals, stream versions, decodable rows, the append-only guard.
//
// Requirements:
// - Reads the log page by page in one REPEATABLE READ snapshot, never all of it in memory; writes nothing.
// - Recomputes each event's link with built-in functions in its own query (chainSql.ts), and each seal
//   in its own code (node:crypto): a function stored in the checked database is never trusted.
// - Names the first bad position and what is wrong with it; keeps going to count the rest (up to a cap).
// - A database that is not an actorzero log (no schema, foreign columns) is a StoreError `refused`, not a
//   failed verification: there is nothing to verify.
// - An anchor ({position, hash} printed by an earlier verify) proves the log only grew since: the seal
//   at that position still carries that hash (or, for an anchor of a schema 5 log, the event there does),
//   and the seals from there on are intact.
// - `from` (a seal an earlier check found intact) checks only what came after it, as open does:
//   that seal unchanged, the seals after it, and the events after it (without a full decode).
import { EventDecodeError } from "./errors.ts";
import { logShape } from "./logShape.ts";
import { SealWalk } from "./sealWalk.ts";
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
  /**
   * The anchor to keep: the last seal (its position and hash); for a log never sealed (written by
   * schema 5 and not opened for writing since), the last event and its hash. Position 0 and hash null
   * when there is none.
   */
  head: { position: number; hash: string | null };
  /** The last event's position (0 for an empty log). */
  lastPosition: number;
  /** Events after the head's seal: covered by their streams' chains until the next seal. */
  unsealed: number;
  /** Events at or below this position were written before the log had a chain (an upgraded log). */
  chainAfter: number;
  /** How many events predate the chain, so nothing proves them. */
  unchained: number;
  /** The anchor checked, when one was given. */
  since?: LogAnchor;
  /** The problems found, in log order (at most MAX_PROBLEMS): `problems[0]` is the first bad position. */
  problems: LogProblem[];
};

export type VerifyLogOptions = {
  since?: LogAnchor;
  pageSize?: number;
  /** A seal found intact before: check only what follows it, and decode nothing (open's check). */
  from?: LogAnchor;
};

const MAX_PROBLEMS = 20;
const DEFAULT_PAGE = 1000;

/** Parses `<position>:<hash>` as `verify-log --print-head` prints it; undefined when it is not one. */
export const parseAnchor = (text: string): LogAnchor | undefined => {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/i.exec(text.trim());
  return m ? { position: Number(m[1]), hash: m[2]!.toLowerCase() } : undefined;
};

export const formatAnchor = (a: LogAnchor): string => `${a.position}:${a.hash}`;

type ChainRow = EventRow & { hash: string | null; expected: string; prev_version: number | string | null };

const GENESIS = `decode('${GENESIS_HASH_HEX}', 'hex')`;

/**
 * Each row with its stored hash and the hash its link should have: up to position `$4` (the chain of
 * schema 2 to 5) after the previous row's stored hash (`$3` is the hash of the row before the page),
 * above it after its stream's previous event (found by the stream index, also below the page).
 */
const PAGE_SQL = `
SELECT ${EVENT_COLUMNS.split(", ")
  .map((c) => `e.${c}`)
  .join(", ")}, encode(e.hash, 'hex') AS hash,
       encode(sha256(CASE WHEN e.global_position > $4 THEN coalesce(p.hash, ${GENESIS})
                          WHEN row_number() OVER w = 1 THEN decode($3, 'hex')
                          ELSE coalesce(lag(e.hash) OVER w, ${GENESIS}) END || ${ROW_ENCODING_SQL}), 'hex') AS expected,
       p.stream_version AS prev_version
  FROM (SELECT * FROM events WHERE global_position > $1 ORDER BY global_position LIMIT $2) e
  LEFT JOIN LATERAL (SELECT q.hash, q.stream_version FROM events q
                      WHERE q.stream_id = e.stream_id AND q.stream_version < e.stream_version
                      ORDER BY q.stream_version DESC LIMIT 1) p ON true
  WINDOW w AS (ORDER BY e.global_position)
  ORDER BY e.global_position`;

const LEGACY_PAGE_SQL = `SELECT ${EVENT_COLUMNS}, NULL::text AS hash, '' AS expected, NULL AS prev_version
  FROM events WHERE global_position > $1 ORDER BY global_position LIMIT $2`;

/** Verifies the log in `sql`'s database; see the header for what is checked. */
export const verifyEventLog = async (sql: SqlExecutor, options: VerifyLogOptions = {}): Promise<LogVerification> =>
  sql.transaction(async (tx) => {
    await tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
    // Each row's stream predecessor is an index lookup: a plan that reads the table for it (PGlite's
    // log is never analysed) would read the log once per row.
    await tx.exec("SET LOCAL enable_seqscan = off");
    const shape = await logShape(tx);
    const problems: LogProblem[] = [];
    const report = (position: number | null, problem: string) => {
      if (problems.length < MAX_PROBLEMS) problems.push({ position, problem });
    };
    if (!Number.isFinite(shape.chainAfter)) {
      report(
        null,
        "the record of where the chain starts (actorzero_chain) was deleted: every event is checked as chained",
      );
      shape.chainAfter = 0;
    }
    if (shape.trigger !== "O") {
      report(
        null,
        shape.trigger === null
          ? "the append-only trigger actorzero_events_append_only is missing: rows can be changed without a trace in the database"
          : "the append-only trigger actorzero_events_append_only is disabled: rows can be changed without a trace in the database",
      );
    }
    const from = options.from;
    const seals = new SealWalk(tx, shape.sealed, report, from);
    if (from) await seals.checkStart();
    const pageSize = options.pageSize ?? DEFAULT_PAGE;
    const versions = new Map<string, number>();
    let events = 0;
    let unchained = 0;
    let last: { position: number; hash: string | null } = { position: from?.position ?? 0, hash: null };
    let previous = from ? await hashBefore(tx, from.position) : GENESIS_HASH_HEX;
    let sinceEvent: string | null | undefined;
    for (let after = last.position; ;) {
      const { rows } = shape.chained
        ? await tx.query<ChainRow>(PAGE_SQL, [
            after,
            pageSize,
            previous,
            Math.min(shape.streamsAfter, Number.MAX_SAFE_INTEGER),
          ])
        : await tx.query<ChainRow>(LEGACY_PAGE_SQL, [after, pageSize]);
      for (const row of rows) {
        const position = Number(row.global_position);
        events += 1;
        await seals.add(position, row.hash);
        if (!shape.chained || position <= shape.chainAfter) {
          unchained += 1;
          if (row.hash !== null)
            report(
              position,
              `carries a hash but lies before the chain's start (after position ${shape.chainAfter}): the chain's start was moved`,
            );
        } else if (row.hash === null) {
          report(position, "has no hash: it was written around the append (raw SQL), not chained");
        } else if (row.hash !== row.expected) {
          report(
            position,
            `its hash does not follow from the event before it: this event, or the one before it, was changed, or events between them were deleted or moved`,
          );
        }
        if (from && !versions.has(row.stream_id)) versions.set(row.stream_id, Number(row.prev_version ?? 0));
        checkVersion(versions, row, position, report);
        if (!from) {
          try {
            verifyRow(row);
          } catch (e) {
            report(
              position,
              e instanceof EventDecodeError
                ? `cannot be decoded: ${e.message.replace(/^Event at global_position \d+ /, "")}`
                : String(e),
            );
          }
        }
        if (options.since && position === options.since.position) sinceEvent = row.hash;
        last = { position, hash: row.hash };
        previous = row.hash ?? GENESIS_HASH_HEX;
      }
      if (rows.length < pageSize) break;
      after = last.position;
    }
    await seals.finish(last.position);
    if (options.since)
      checkSince(
        options.since,
        seals.seen.get(options.since.position),
        options.since.position <= shape.streamsAfter ? sinceEvent : undefined,
        last.position,
        report,
      );
    if (shape.handed < last.position) {
      report(
        last.position,
        `positions above the sequence (${shape.handed}): events were inserted with made-up positions`,
      );
    }
    problems.sort(byPosition);
    const head = shape.sealed ? seals.head : { position: last.position, hash: last.hash };
    return {
      ok: problems.length === 0,
      events,
      head,
      lastPosition: last.position,
      unsealed: shape.sealed ? seals.unsealed : 0,
      chainAfter: shape.chained ? shape.chainAfter : last.position,
      unchained,
      since: options.since,
      problems,
    };
  });

/**
 * An anchor names a seal, or an event of the chain of the whole log (schema 5 printed those): its
 * hash there is the anchor's, and everything after it was checked above.
 */
const checkSince = (
  since: LogAnchor,
  seal: string | undefined,
  event: string | null | undefined,
  lastPosition: number,
  report: (p: number | null, s: string) => void,
) => {
  if (seal === since.hash || event === since.hash) return;
  const found = seal ?? event;
  if (found !== undefined) {
    report(
      since.position,
      `its ${seal === undefined ? "" : "seal's "}hash is ${found ?? "absent"}, not the anchor's ${since.hash}: the log before the anchor was changed`,
    );
  } else {
    report(
      since.position,
      since.position > lastPosition
        ? `the anchor's position is past the log's head (${lastPosition}): the log lost events since the anchor was taken`
        : "no seal is at the anchor's position any more: it was deleted, or the log before it was changed",
    );
  }
};

/** The hash of the last row at or before `position` (GENESIS when there is none or it is unchained). */
const hashBefore = async (tx: SqlExecutor, position: number): Promise<string> =>
  (
    await tx.query<{ hash: string | null }>(
      "SELECT encode(hash, 'hex') AS hash FROM events WHERE global_position <= $1 ORDER BY global_position DESC LIMIT 1",
      [position],
    )
  ).rows[0]?.hash ?? GENESIS_HASH_HEX;

/** Log order; problems of the log as a whole (no position) after the positioned ones. */
export const byPosition = (a: LogProblem, b: LogProblem): number =>
  a.position === b.position ? 0 : a.position === null ? 1 : b.position === null ? -1 : a.position - b.position;

/** Stream versions run 1, 2, 3… in log order: a gap, a repeat or a step back is a deleted, inserted or moved event. */
const checkVersion = (
  versions: Map<string, number>,
  row: EventRow,
  position: number,
  report: (p: number, s: string) => void,
) => {
  const last = versions.get(row.stream_id) ?? 0;
  const version = Number(row.stream_version);
  if (version !== last + 1) {
    report(
      position,
      last === 0
        ? `stream ${row.stream_id} starts at version ${version}, not 1: its first events are missing`
        : version <= last
          ? `stream ${row.stream_id} goes back from version ${last} to ${version}: events were moved`
          : `stream ${row.stream_id} jumps from version ${last} to ${version}: events are missing`,
    );
  }
  versions.set(row.stream_id, Math.max(last, version));
};
