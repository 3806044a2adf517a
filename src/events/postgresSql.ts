// The pg pool as the store's SQL door: named prepared statements for our own hot queries, transactions on one
// client, and which driver errors mean the server is out of reach.
import { createHash } from "node:crypto";
import type pg from "pg";
import type { SqlExecutor } from "./store.ts";

/** Our own hot statements are prepared once per connection, under a name derived from their text. */
const statementName = (sql: string) => `az_${createHash("sha1").update(sql).digest("hex").slice(0, 16)}`;
const PREPARED = new Map<string, string>();
export const prepared = (sql: string, values: unknown[]): pg.QueryConfig => {
  let name = PREPARED.get(sql);
  if (name === undefined) PREPARED.set(sql, (name = statementName(sql)));
  return { name, text: sql, values };
};

/** The SQL door over the pool; a transaction inside a transaction runs in the outer one. */
export const pgExecutor = (
  pool: pg.Pool,
  guard: () => void,
  q: pg.Pool | pg.PoolClient = pool,
  inTransaction = false,
): SqlExecutor => {
  return {
    query: async <R = Record<string, unknown>>(sql: string, params?: unknown[]) => {
      guard();
      const { rows } = await q.query<R & pg.QueryResultRow>(sql, params);
      return { rows: rows as R[] };
    },
    exec: async (sql: string) => {
      guard();
      await q.query(sql);
    },
    transaction: async <T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => {
      guard();
      if (inTransaction) return fn(pgExecutor(pool, guard, q, true));
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query("BEGIN");
        const result = await fn(pgExecutor(pool, guard, client, true));
        await client.query("COMMIT");
        return result;
      } catch (e) {
        await client.query("ROLLBACK").catch((rollbackError: Error) => (broken = rollbackError));
        throw e;
      } finally {
        client.release(broken);
      }
    },
  };
};

/** Class 08 (connection exception), 57P (operator intervention), or a socket error. */
export const isConnectionError = (code: unknown) =>
  typeof code === "string" &&
  (code.startsWith("08") ||
    code.startsWith("57P") ||
    ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND"].includes(code));
