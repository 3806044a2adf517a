// `actorzero replay [--verify]`: rebuild every projection from the log; with --verify, rebuild aside and compare.
import type { ProjectionsSnapshot, SnapshotRow } from "../../projections/engine.ts";
import { withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { defineCommand, booleanFlag, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { duration } from "../format.ts";
import { locate } from "../openLog.ts";

export const replaySpec = defineCommand({
  name: "replay",
  summary:
    "Rebuild every projection from zero by replaying the log; --verify compares a scratch rebuild with the stored ones.",
  usage: ["replay [--verify] [--json]"],
  args: [],
  flags: {
    ...STORE_FLAGS,
    verify: booleanFlag(
      "rebuild into scratch tables and report every difference from the stored projections (exit 1 if any)",
    ),
    ...JSON_FLAG,
  },
  details: `replay replaces the stored projections with a rebuild from the log and says which rows it changed.
replay --verify changes nothing: it rebuilds into scratch tables up to the same log position, compares
row by row, and exits 1 naming each projection, key and field that differs.
--json: { verified, ok, position, ms, differences: [{ projection, key, fields, stored, rebuilt }] }.`,
});
type Values = ValuesOf<typeof replaySpec>;

export type Difference = {
  projection: string;
  key: string;
  fields: string[];
  stored: SnapshotRow | null;
  rebuilt: SnapshotRow | null;
};

export const replayCommand = async (v: Values, io: Io): Promise<number> =>
  withLog(locate(v, "replay"), { create: false, throughHolder: false }, async ({ projections }) => {
    const started = Date.now();
    let position: number;
    let differences: Difference[];
    if (v.verify) {
      const result = await projections.verify();
      position = result.position;
      differences = result.mismatches.map((m) => ({ ...m, fields: fieldsDiffering(m.stored, m.rebuilt) }));
    } else {
      const before = await projections.snapshot();
      position = await projections.rebuild();
      differences = compare(before, await projections.snapshot());
    }
    const ms = Date.now() - started;
    const ok = differences.length === 0;
    if (v.json) {
      io.print(JSON.stringify({ verified: v.verify === true, ok, position, ms, differences }));
      return v.verify && !ok ? EXIT.failed : EXIT.ok;
    }
    const p = io.paint;
    const names = (await projections.checkpoints()).map((c) => c.name).join(", ");
    if (v.verify) {
      if (ok)
        io.print(
          `${p.green("ok")}: a rebuild from zero up to log position ${position} matches the stored projections (${names}) row for row · ${duration(ms)}`,
        );
      else {
        io.print(
          `${p.red("differs")}: ${differences.length} stored projection row${differences.length === 1 ? "" : "s"} differ from a rebuild from the log up to position ${position}:`,
        );
        for (const d of differences) io.print(`  ${describe(d)}`);
        io.print(p.dim("The log is the truth: actorzero replay rebuilds the stored projections from it."));
      }
      return ok ? EXIT.ok : EXIT.failed;
    }
    io.print(`rebuilt ${names} from zero up to log position ${position} · ${duration(ms)}`);
    if (ok) io.print("every row came out as it was stored");
    else {
      io.print(
        `${differences.length} row${differences.length === 1 ? "" : "s"} changed (the stored ones did not match the log):`,
      );
      for (const d of differences) io.print(`  ${describe(d)}`);
    }
    return EXIT.ok;
  });

const describe = (d: Difference): string => {
  if (!d.stored) return `${d.projection} ${d.key}: missing from the stored projection`;
  if (!d.rebuilt) return `${d.projection} ${d.key}: stored, but the log does not produce it`;
  return `${d.projection} ${d.key}: ${d.fields.join("; ")}`;
};

const compare = (a: ProjectionsSnapshot, b: ProjectionsSnapshot): Difference[] => {
  const out: Difference[] = [];
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = new Map((a[name] ?? []).map((r) => [r.key, r]));
    const y = new Map((b[name] ?? []).map((r) => [r.key, r]));
    for (const key of new Set([...x.keys(), ...y.keys()])) {
      const s = x.get(key) ?? null;
      const r = y.get(key) ?? null;
      const fields = fieldsDiffering(s, r);
      if (fields.length > 0 || (s === null) !== (r === null))
        out.push({ projection: name, key, fields, stored: s, rebuilt: r });
    }
  }
  return out;
};

/** `state.status: stored "failed", rebuilt "idle"` for each leaf that differs (the first few). */
export const fieldsDiffering = (stored: SnapshotRow | null, rebuilt: SnapshotRow | null, max = 5): string[] => {
  if (!stored || !rebuilt) return [];
  const out: string[] = [];
  const walk = (x: unknown, y: unknown, path: string) => {
    if (out.length >= max) return;
    const bothObjects =
      typeof x === "object" &&
      typeof y === "object" &&
      x !== null &&
      y !== null &&
      Array.isArray(x) === Array.isArray(y);
    if (bothObjects) {
      const keys = new Set([...Object.keys(x as object), ...Object.keys(y as object)]);
      for (const k of keys) {
        const xv = (x as Record<string, unknown>)[k];
        const yv = (y as Record<string, unknown>)[k];
        if (xv === undefined && yv === undefined) continue;
        walk(xv, yv, path ? `${path}.${k}` : k);
      }
      return;
    }
    if (JSON.stringify(x) !== JSON.stringify(y)) out.push(`${path}: stored ${short(x)}, rebuilt ${short(y)}`);
  };
  walk(
    { group: stored.group, order: stored.order, position: stored.position, state: stored.state },
    { group: rebuilt.group, order: rebuilt.order, position: rebuilt.position, state: rebuilt.state },
    "",
  );
  return out;
};

const short = (v: unknown): string => {
  const s = JSON.stringify(v) ?? "undefined";
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
};
