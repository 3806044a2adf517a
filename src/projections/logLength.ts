// Whether the log is shorter than its projections: a checkpoint past the log's head means events were removed.
//
// Requirements:
// - A checkpoint is always the position of an event that was read (never a gap past the head), so a
//   checkpoint above the highest stored position can only mean that the log lost events (a TRUNCATE or
//   DELETE with the append-only trigger off) while the projections kept what they had folded from them.
// - Cheap enough to run on every open: one query on the (small) checkpoints table.
import { StoreError } from "../events/errors.ts";
import type { EventStore, SqlExecutor } from "../events/store.ts";

/** A message naming the problem when a checkpoint in `checkpoints` lies past `head`; null otherwise (or without projections). */
export const logShorterThanProjections = async (
  sql: SqlExecutor,
  head: number,
  checkpoints = "projection_checkpoints",
): Promise<string | null> => {
  const { rows: found } = await sql.query<{ exists: boolean }>("SELECT to_regclass($1) IS NOT NULL AS exists", [
    checkpoints,
  ]);
  if (!found[0]?.exists) return null;
  const { rows } = await sql.query<{ position: string | number | null }>(
    `SELECT max(position) AS position FROM ${checkpoints}`,
  );
  const position = Number(rows[0]?.position ?? 0);
  if (!(position > head)) return null;
  return `the log ends at position ${head}, but its projections were built from events up to position ${position}: events were removed from the log`;
};

/** Refuses to open projections over a log shorter than them: they would show contexts that are no longer in the log. */
export const refuseShorterLog = async (store: EventStore, checkpoints: string): Promise<void> => {
  const shorter = await logShorterThanProjections(store.sql, await store.headPosition(), checkpoints);
  if (shorter) throw new StoreError("refused", `${shorter} (actorzero verify-log says more); nothing was opened`);
};
