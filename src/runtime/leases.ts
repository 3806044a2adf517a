// Run leases: a context is driven by one runtime process at a time (DESIGN §9). PostgreSQL is the coordinator:
// a lease is a row with an owner and an expiry, renewed while the owner lives, taken over once it has expired.
import type { SqlExecutor } from "../events/store.ts";

export type LeaseResult = { ok: true; takenOver: boolean } | { ok: false; owner: string };

export interface Leases {
  /** This runtime's owner name (unique per process). */
  readonly owner: string;
  /** Takes the run lease of a context, unless another live owner holds it. */
  acquire(contextId: string): Promise<LeaseResult>;
  release(contextId: string): Promise<void>;
  /** Context ids whose lease has expired (its owner died) or that have none, among `contextIds`. */
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
  acquire: async () => ({ ok: true, takenOver: false }),
  release: async () => undefined,
  unowned: async (contextIds) => [...contextIds],
  close: async () => undefined,
});

const DDL = `
CREATE TABLE IF NOT EXISTS context_leases (
  context_id TEXT        PRIMARY KEY,
  owner      TEXT        NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
)`;

/**
 * Leases in the log's own database, for several processes on one PostgreSQL log. With `exclusive`, a
 * lease of another owner is always stale, so it is taken over at once.
 */
export const sqlLeases = async (sql: SqlExecutor, options: { owner: string; ttlMs: number; exclusive: boolean }): Promise<Leases> => {
  await sql.exec(DDL);
  const { owner, ttlMs, exclusive } = options;
  const ttl = `${Math.max(1, Math.round(ttlMs))} milliseconds`;
  const held = new Set<string>();
  // Renew well before expiry; a process that stops renewing (it died) loses its leases after ttlMs.
  const timer = setInterval(() => {
    if (held.size === 0) return;
    void sql.query(`UPDATE context_leases SET expires_at = now() + $2::interval WHERE owner = $1`, [owner, ttl]).catch(() => undefined);
  }, Math.max(50, ttlMs / 3));
  timer.unref();

  return {
    owner,
    async acquire(contextId) {
      // One statement: insert, or take over a lease that is ours, expired, or (exclusive) anyone's.
      const { rows } = await sql.query<{ previous: string | null; owner: string }>(
        `WITH previous AS (SELECT owner FROM context_leases WHERE context_id = $1)
         INSERT INTO context_leases (context_id, owner, expires_at) VALUES ($1, $2, now() + $3::interval)
         ON CONFLICT (context_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
           WHERE context_leases.owner = EXCLUDED.owner OR context_leases.expires_at < now() OR $4::boolean
         RETURNING (SELECT owner FROM previous) AS previous, context_leases.owner`,
        [contextId, owner, ttl, exclusive],
      );
      const row = rows[0];
      if (!row) {
        const { rows: current } = await sql.query<{ owner: string }>(`SELECT owner FROM context_leases WHERE context_id = $1`, [contextId]);
        return { ok: false, owner: current[0]?.owner ?? "unknown" };
      }
      held.add(contextId);
      return { ok: true, takenOver: row.previous !== null && row.previous !== owner };
    },
    async release(contextId) {
      held.delete(contextId);
      await sql.query(`DELETE FROM context_leases WHERE context_id = $1 AND owner = $2`, [contextId, owner]);
    },
    async unowned(contextIds) {
      if (contextIds.length === 0) return [];
      if (exclusive) return [...contextIds];
      const { rows } = await sql.query<{ context_id: string }>(
        `SELECT id AS context_id FROM jsonb_array_elements_text($1::jsonb) AS x(id)
         WHERE NOT EXISTS (SELECT 1 FROM context_leases l WHERE l.context_id = x.id AND l.expires_at >= now())`,
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
