// The projections' two tables (states and checkpoints) in the log's database: created, read, and reset.
//
// Requirements:
// - Every process that opens the projections may create the tables at the same moment: the create runs
//   under DDL_LOCK_SQL, in one message (one implicit transaction), so the second waits and finds them made.
// - A reset runs in the caller's transaction, which holds the same lock: two processes never both upgrade
//   to TRUNCATE's lock (a deadlock), and the second decides what is stale after the first has reset it.
import { DDL_LOCK_SQL } from "../events/sql.ts";
import type { SqlExecutor } from "../events/store.ts";
import type { Checkpoint } from "./api.ts";

/** Creates the states table `state` and the checkpoints table `checkpoints` when missing. */
export const createStateTables = (sql: SqlExecutor, state: string, checkpoints: string): Promise<void> =>
  sql.exec(`
    ${DDL_LOCK_SQL};
    CREATE TABLE IF NOT EXISTS ${state} (
      projection TEXT   NOT NULL,
      key        TEXT   NOT NULL,
      grp        TEXT,
      ord        BIGINT NOT NULL DEFAULT 0,
      position   BIGINT NOT NULL,
      state      JSONB  NOT NULL,
      PRIMARY KEY (projection, key)
    );
    CREATE INDEX IF NOT EXISTS ${state}_grp ON ${state} (projection, grp, ord);
    CREATE TABLE IF NOT EXISTS ${checkpoints} (
      name     TEXT    PRIMARY KEY,
      version  INTEGER NOT NULL,
      position BIGINT  NOT NULL
    );
  `);

/** Takes the lock a reset must hold, inside the caller's transaction (until it ends). */
export const lockForReset = async (tx: SqlExecutor): Promise<void> => {
  await tx.query(DDL_LOCK_SQL);
};

export const readCheckpoints = async (sql: SqlExecutor, checkpoints: string): Promise<Checkpoint[]> => {
  const { rows } = await sql.query<{ name: string; version: number; position: string | number }>(
    `SELECT name, version, position FROM ${checkpoints} ORDER BY name`,
  );
  return rows.map((r) => ({ name: r.name, version: Number(r.version), position: Number(r.position) }));
};

/** Empties the states of `projections` and sets their checkpoints to zero at the given versions, in `tx` (locked). */
export const resetRows = async (
  tx: SqlExecutor,
  state: string,
  checkpoints: string,
  projections: readonly { name: string; version: number }[],
) => {
  const names = JSON.stringify(projections.map((p) => p.name));
  const rows = JSON.stringify(projections.map((p) => ({ n: p.name, v: p.version })));
  // When no other projection shares the table, TRUNCATE: a rebuild then leaves no dead rows behind.
  const { rows: others } = await tx.query(
    `SELECT 1 FROM ${state} WHERE projection NOT IN (SELECT jsonb_array_elements_text($1::jsonb)) LIMIT 1`,
    [names],
  );
  if (others.length === 0) await tx.exec(`TRUNCATE ${state}`);
  else
    await tx.query(`DELETE FROM ${state} WHERE projection IN (SELECT jsonb_array_elements_text($1::jsonb))`, [names]);
  await tx.query(
    `INSERT INTO ${checkpoints} (name, version, position)
     SELECT n, v, 0 FROM jsonb_to_recordset($1::jsonb) AS x(n text, v integer)
     ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version, position = 0`,
    [rows],
  );
};
