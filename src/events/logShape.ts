// What a database holds before its log is verified: an actorzero log or not (refused), chained and sealed or
// of an older schema, its append-only guard, and the highest position handed out.
import { StoreError } from "./errors.ts";
import { EVENT_COLUMNS } from "./sql.ts";
import type { SqlExecutor } from "./store.ts";

const REQUIRED_COLUMNS = EVENT_COLUMNS.split(", ");

export type Shape = {
  chained: boolean;
  chainAfter: number;
  streamsAfter: number;
  sealed: boolean;
  trigger: string | null;
  handed: number;
};

/** What the database holds: refuses one that is not an actorzero log; finds whether it has a chain yet. */
export const logShape = async (tx: SqlExecutor): Promise<Shape> => {
  const { rows } = await tx.query<{
    migrations: boolean;
    events: boolean;
    chain: boolean;
    seals: boolean;
    columns: string[] | null;
  }>(
    `SELECT to_regclass('actorzero_schema_migrations') IS NOT NULL AS migrations, to_regclass('events') IS NOT NULL AS events,
            to_regclass('actorzero_chain') IS NOT NULL AS chain,
            to_regclass('actorzero_seals') IS NOT NULL AND to_regclass('actorzero_stream_chains') IS NOT NULL AS seals,
            (SELECT array_agg(attname::text) FROM pg_attribute WHERE attrelid = to_regclass('events') AND attnum > 0 AND NOT attisdropped) AS columns`,
  );
  const r = rows[0]!;
  if (!r.migrations || !r.events) {
    throw new StoreError(
      "refused",
      `this database holds no actorzero event log (${r.events ? "an events table, but no actorzero_schema_migrations" : "no events table"})`,
    );
  }
  const missing = REQUIRED_COLUMNS.filter((c) => !r.columns?.includes(c));
  if (missing.length > 0)
    throw new StoreError("refused", `the events table is not an actorzero event log: it lacks ${missing.join(", ")}`);
  const chained = r.chain && r.columns!.includes("hash");
  const sealed = chained && r.seals;
  const chain = chained
    ? (
        await tx.query<{ after: string | number | null; streams: string | number | null }>(
          `SELECT max(after_position) AS after, ${sealed ? "(SELECT max(after_position) FROM actorzero_stream_chains)" : "NULL"} AS streams FROM actorzero_chain`,
        )
      ).rows[0]
    : undefined;
  const chainAfter = chained ? Number(chain?.after ?? Number.NaN) : 0;
  // A log without seals (schema 5) is all one chain; a deleted record of where stream chains start, as "from the start".
  const streamsAfter = sealed ? Number(chain?.streams ?? 0) : Number.POSITIVE_INFINITY;
  const trigger =
    (
      await tx.query<{ enabled: string }>(
        "SELECT tgenabled::text AS enabled FROM pg_trigger WHERE tgrelid = 'events'::regclass AND tgname = 'actorzero_events_append_only'",
      )
    ).rows[0]?.enabled ?? null;
  const handed = Number(
    (
      await tx.query<{ handed: string | number | null }>(
        "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'global_position')::regclass), 0) AS handed",
      )
    ).rows[0]?.handed ?? 0,
  );
  return { chained, chainAfter, streamsAfter, sealed, trigger, handed };
};
