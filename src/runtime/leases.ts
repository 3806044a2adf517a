// Run leases: a context is driven by one runtime process at a time (DESIGN §9). PostgreSQL is the coordinator:
// a lease is a row with an owner and an expiry, renewed while the owner lives, taken over once it has expired.
//
// Requirements:
// - One lease write per run: taking the lease. The run's end in the log frees it (a lease remembers the
//   stream version it was taken at; a terminal event past that version ends it), so a run that ends
//   writes nothing more to the lease table, and another process may take the context at once.
// - Taking a lease also says the stream's version, so a caller whose actor is current reads nothing.
// - Takes asked for while another is in flight go together as one statement (one round trip, one
//   transaction), each with the answer it would have had alone.
// - A lease taken for a run that never started (or a recovery that found nothing to close) is released
//   by deleting its row.
// - Only leases in force are renewed; a process that stops renewing (it died) loses them after ttlMs.
import type { SqlExecutor } from "../events/store.ts";
import { DDL_LOCK_SQL } from "../events/sql.ts";

/** `version`: the stream's version as the lease was taken (null when the lease store does not read the log). */
export type LeaseResult = { ok: true; takenOver: boolean; version: number | null } | { ok: false; owner: string };

export interface Leases {
  /** This runtime's owner name (unique per process). */
  readonly owner: string;
  /** Takes the run lease of a context, unless another live owner holds it. */
  acquire(contextId: string): Promise<LeaseResult>;
  /** Gives up a lease whose run never recorded an end (one write). */
  release(contextId: string): Promise<void>;
  /** The run's terminal event is in the log, which frees the lease: nothing is written. */
  runEnded(contextId: string): Promise<void>;
  /** Context ids whose lease has expired (its owner died), has ended with its run, or that have none, among `contextIds`. */
  unowned(contextIds: readonly string[]): Promise<string[]>;
  /** Stops renewing and releases every lease this owner holds. */
  close(): Promise<void>;
}

/**
 * Leases for a log only this process can write (a PGlite data dir is locked to one process): every lease
 * is free, and nothing needs to be written to know it.
 */
export const localLeases = (owner: string): Leases => ({
  owner,
  acquire: async () => ({ ok: true, takenOver: false, version: null }),
  release: async () => undefined,
  runEnded: async () => undefined,
  unowned: async (contextIds) => [...contextIds],
  close: async () => undefined,
});

// since_version is null in rows a runtime from before it wrote: those leases end only when deleted.
// Sent as one message under the lock every process takes to create (see DDL_LOCK_SQL).
const DDL = `
${DDL_LOCK_SQL};
CREATE TABLE IF NOT EXISTS context_leases (
  context_id    TEXT        PRIMARY KEY,
  owner         TEXT        NOT NULL,
  expires_at    TIMESTAMPTZ NOT NULL,
  since_version INTEGER
)`;
const HAS_SINCE = `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'context_leases'::regclass AND attname = 'since_version' AND NOT attisdropped) AS has`;

const RUN_ENDS = `('RunCompleted', 'RunStopped', 'RunFailed', 'RunInterrupted')`;

/** True for a lease row `l` that no longer binds anyone: expired, or its run's end is in the log. */
const FREE = (l: string) => `(${l}.expires_at < now() OR EXISTS (
  SELECT 1 FROM events e WHERE e.stream_id = ${l}.context_id AND e.stream_version > ${l}.since_version AND e.type IN ${RUN_ENDS}))`;

/** The owner of the lease in force on a context, or null: what another process would be refused by. */
export const leaseHolder = async (sql: SqlExecutor, contextId: string): Promise<string | null> => {
  const { rows } = await sql.query<{ owner: string }>(
    `SELECT l.owner FROM context_leases l WHERE l.context_id = $1 AND NOT ${FREE("l")}`,
    [contextId],
  );
  return rows[0]?.owner ?? null;
};

/**
 * Takes the leases of `$1` (text[], sorted, no repeats) for owner `$2` for `$3` (interval): each is
 * inserted, or taken over when it is ours, free, or (`$4` exclusive) anyone's. One row comes back per
 * lease taken, with the owner before and the stream's version, which the lease's run must end past; a
 * context missing from the answer is held by another live owner. Rows are taken in id order, so two
 * processes' groups lock shared rows in the same order.
 */
const ACQUIRE_SQL = `WITH previous AS (SELECT context_id, owner FROM context_leases WHERE context_id = ANY($1::text[]))
  INSERT INTO context_leases (context_id, owner, expires_at, since_version)
    SELECT w.id, $2, now() + $3::interval,
           coalesce((SELECT stream_version FROM events WHERE stream_id = w.id ORDER BY stream_version DESC LIMIT 1), 0)
      FROM unnest($1::text[]) AS w(id) ORDER BY w.id
  ON CONFLICT (context_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, since_version = EXCLUDED.since_version
    WHERE context_leases.owner = EXCLUDED.owner OR $4::boolean OR ${FREE("context_leases")}
  RETURNING context_leases.context_id,
            (SELECT p.owner FROM previous p WHERE p.context_id = context_leases.context_id) AS previous,
            context_leases.since_version AS version`;

/** The most leases one statement takes. */
const GROUP_MAX = 256;

/**
 * Group commit for lease takes: a take goes at once when none is in flight; the takes asked for while one
 * is in flight go together, as one statement, when it ends. Under load most runs start while another's
 * take is on its way, and each take was a round trip and a transaction of its own (two of a fresh
 * delegation's nine statements). A group that fails is sent again one context at a time, so each take
 * gets its own answer or its own error.
 */
const coalescing = (
  take: (ids: readonly string[]) => Promise<Map<string, LeaseResult>>,
): ((contextId: string) => Promise<LeaseResult>) => {
  type Waiter = { id: string; resolve: (r: LeaseResult) => void; reject: (e: unknown) => void };
  const queue: Waiter[] = [];
  let sending = false;
  const settle = async (group: readonly Waiter[]) => {
    const ids = [...new Set(group.map((w) => w.id))].sort();
    try {
      const results = await take(ids);
      for (const w of group) w.resolve(results.get(w.id)!);
    } catch (e) {
      if (ids.length === 1) for (const w of group) w.reject(e);
      else for (const id of ids) await settle(group.filter((w) => w.id === id));
    }
  };
  const drain = async () => {
    sending = true;
    try {
      while (queue.length > 0) await settle(queue.splice(0, GROUP_MAX));
    } finally {
      sending = false;
    }
  };
  return (id) =>
    new Promise<LeaseResult>((resolve, reject) => {
      queue.push({ id, resolve, reject });
      if (!sending) void drain();
    });
};

/**
 * Leases in the log's own database, for several processes on one PostgreSQL log. With `exclusive`, a
 * lease of another owner is always stale, so it is taken over at once.
 */
export const sqlLeases = async (
  sql: SqlExecutor,
  options: { owner: string; ttlMs: number; exclusive: boolean },
): Promise<Leases> => {
  await sql.exec(DDL);
  // A table an earlier runtime created gets the column; ALTER locks the table, so only when it is missing.
  if ((await sql.query<{ has: boolean }>(HAS_SINCE)).rows[0]?.has !== true) {
    await sql.exec(`${DDL_LOCK_SQL}; ALTER TABLE context_leases ADD COLUMN IF NOT EXISTS since_version INTEGER`);
  }
  const { owner, ttlMs, exclusive } = options;
  const ttl = `${Math.max(1, Math.round(ttlMs))} milliseconds`;
  const held = new Set<string>();
  // Renew well before expiry; a process that stops renewing (it died) loses its leases after ttlMs.
  const timer = setInterval(
    () => {
      if (held.size === 0) return;
      void sql
        .query(
          `UPDATE context_leases SET expires_at = now() + $2::interval WHERE owner = $1 AND context_id = ANY($3::text[])`,
          [owner, ttl, [...held]],
        )
        .catch(() => undefined);
    },
    Math.max(50, ttlMs / 3),
  );
  timer.unref();

  const acquireGroup = async (ids: readonly string[]): Promise<Map<string, LeaseResult>> => {
    const { rows } = await sql.query<{ context_id: string; previous: string | null; version: number }>(ACQUIRE_SQL, [
      ids,
      owner,
      ttl,
      exclusive,
    ]);
    const results = new Map<string, LeaseResult>();
    for (const row of rows) {
      held.add(row.context_id);
      results.set(row.context_id, {
        ok: true,
        takenOver: row.previous !== null && row.previous !== owner,
        version: Number(row.version),
      });
    }
    const refused = ids.filter((id) => !results.has(id));
    if (refused.length > 0) {
      const { rows: current } = await sql.query<{ context_id: string; owner: string }>(
        `SELECT context_id, owner FROM context_leases WHERE context_id = ANY($1::text[])`,
        [refused],
      );
      const owners = new Map(current.map((r) => [r.context_id, r.owner]));
      for (const id of refused) results.set(id, { ok: false, owner: owners.get(id) ?? "unknown" });
    }
    return results;
  };
  const acquire = coalescing(acquireGroup);

  return {
    owner,
    acquire,
    async release(contextId) {
      held.delete(contextId);
      await sql.query(`DELETE FROM context_leases WHERE context_id = $1 AND owner = $2`, [contextId, owner]);
    },
    async runEnded(contextId) {
      // The row stays, freed by the log; it is renewed no more, so it also expires.
      held.delete(contextId);
    },
    async unowned(contextIds) {
      if (contextIds.length === 0) return [];
      if (exclusive) return [...contextIds];
      const { rows } = await sql.query<{ context_id: string }>(
        `SELECT id AS context_id FROM jsonb_array_elements_text($1::jsonb) AS x(id)
         WHERE NOT EXISTS (SELECT 1 FROM context_leases l WHERE l.context_id = x.id AND NOT ${FREE("l")})`,
        [JSON.stringify(contextIds)],
      );
      return rows.map((r) => r.context_id);
    },
    async close() {
      clearInterval(timer);
      held.clear();
      await sql.query(`DELETE FROM context_leases WHERE owner = $1`, [owner]).catch(() => undefined);
    },
  };
};
