// What `verify` compares: the stored states as a snapshot, the mismatches between two snapshots (stored
// and rebuilt), and every row of the log up to a position parsed in full (reads trust rows; an audit does not).
import { type EventRow, verifyRow } from "../events/codec.ts";
import { READ_RANGE_SQL } from "../events/sql.ts";
import type { SqlExecutor } from "../events/store.ts";
import type { Projection } from "./projection.ts";
import { sameJson, sortRows } from "./snapshot.ts";
import type { ProjectionsSnapshot, SnapshotRow, VerifyResult } from "./api.ts";

/** Every state of `projections` in table `state`, by projection, in their order. */
export const readSnapshot = async (
  sql: SqlExecutor,
  state: string,
  projections: readonly Projection<any>[],
): Promise<ProjectionsSnapshot> => {
  const out: ProjectionsSnapshot = Object.fromEntries(projections.map((p) => [p.name, [] as SnapshotRow[]]));
  const { rows } = await sql.query<{
    projection: string;
    key: string;
    grp: string | null;
    ord: unknown;
    position: unknown;
    state: unknown;
  }>(`SELECT projection, key, grp, ord::float8 AS ord, position::float8 AS position, state FROM ${state}`);
  for (const r of rows) {
    (out[r.projection] ??= []).push({
      key: r.key,
      group: r.grp,
      order: Number(r.ord),
      position: Number(r.position),
      state: r.state,
    });
  }
  for (const name of Object.keys(out)) sortRows(out[name]!);
  return out;
};

/** The keys whose stored state differs from the rebuilt one (or exists in only one of them). */
export const mismatchesOf = (
  projections: readonly Projection<any>[],
  stored: ProjectionsSnapshot,
  rebuilt: ProjectionsSnapshot,
): VerifyResult["mismatches"] => {
  const mismatches: VerifyResult["mismatches"] = [];
  for (const p of projections) {
    const a = new Map((stored[p.name] ?? []).map((r) => [r.key, r]));
    const b = new Map((rebuilt[p.name] ?? []).map((r) => [r.key, r]));
    for (const key of new Set([...a.keys(), ...b.keys()])) {
      const s = a.get(key) ?? null;
      const r = b.get(key) ?? null;
      if (!sameJson(s, r)) mismatches.push({ projection: p.name, key, stored: s, rebuilt: r });
    }
  }
  return mismatches;
};

/**
 * Reads rows are trusted (a cheap check, no full parse); an audit parses every row up to `until` in
 * full and throws EventDecodeError naming the first that fails, e.g. one written around the store.
 */
export const parseEveryRow = async (sql: SqlExecutor, until: number, pageSize: number): Promise<void> => {
  for (let after = 0; after < until;) {
    const { rows } = await sql.query<EventRow>(READ_RANGE_SQL, [after, until, pageSize]);
    if (rows.length === 0) return;
    for (const row of rows) verifyRow(row);
    after = Number(rows[rows.length - 1]!.global_position);
  }
};
