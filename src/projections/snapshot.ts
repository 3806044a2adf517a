// Snapshots of projections for comparing two builds: rows in key order, the in-memory fold, JSON equality.
import type { RecordedEvent } from "../events/schema.ts";
import { ALL_PROJECTIONS } from "./all.ts";
import type { ProjectionsSnapshot, SnapshotRow } from "./api.ts";
import { foldEvents, type Projection, type ProjectionColumns } from "./projection.ts";

/** The rows `projections` would hold after `events`, folded in memory: what a correct engine's snapshot equals. */
export const foldSnapshot = (
  events: readonly RecordedEvent[],
  projections: readonly Projection<any>[] = ALL_PROJECTIONS,
): ProjectionsSnapshot => {
  const out: ProjectionsSnapshot = {};
  for (const p of projections) {
    const rows = [...foldEvents(p, events).entries()].map(([key, state]) => toRow(p, key, state));
    out[p.name] = sortRows(rows.map((r) => ({ ...r, state: JSON.parse(JSON.stringify(r.state)) })));
  }
  return out;
};

export const columnsOf = (p: Projection<any>, key: string, state: unknown): ProjectionColumns =>
  p.columns ? p.columns(key, state) : { group: null, order: 0 };

const toRow = (p: Projection<any>, key: string, state: { position?: number }): SnapshotRow => {
  const c = columnsOf(p, key, state);
  return { key, group: c.group, order: c.order, position: state.position ?? 0, state };
};

export const sortRows = (rows: SnapshotRow[]) => rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

/** Deep equality of JSON values, regardless of object key order (JSONB reorders keys). */
export const sameJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a))
    return a.length === (b as unknown[]).length && a.every((x, i) => sameJson(x, (b as unknown[])[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return (
    ka.length === kb.length &&
    ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
};
