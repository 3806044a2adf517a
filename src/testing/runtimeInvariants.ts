// The invariants checked over a live runtime: reads its log and views through the runtime's own queries (an
// embedder's runtime exposes nothing else), runs every pure check of invariants.ts over them, and compares the
// views with a rebuild from the log.
import type { Runtime } from "../runtime/api.ts";
import type { RecordedEvent } from "../events/schema.ts";
import { foldSnapshot, type SnapshotRow } from "../projections/engine.ts";
import type { ContextView } from "../projections/contexts.ts";
import { contextsProjection } from "../projections/contexts.ts";
import { usageProjection } from "../projections/usage.ts";
import { treeProjection } from "../projections/tree.ts";
import { historyOf, transcriptProjection, type RunTranscript } from "../projections/transcript.ts";
import {
  checkLogShape,
  InvariantViolation,
  violation as v,
  at,
  LogMemory,
  type InvariantName,
  type Violation,
} from "./invariants.ts";
import { checkNoRunOutlivesItsSuperior, checkOneRunAtATime, checkStatus } from "./runInvariants.ts";
import { checkNumbersAndDepths, checkParentLinks } from "./treeInvariants.ts";
import { checkTranscript } from "./transcriptInvariant.ts";
// ------------------------------------------------------------------------------------------ usage

type UsageSum = { inputTokens: number; outputTokens: number; modelCalls: number };
const NO_USAGE: UsageSum = { inputTokens: 0, outputTokens: 0, modelCalls: 0 };
const sumUsage = (events: readonly RecordedEvent[]): UsageSum => {
  const s = { inputTokens: 0, outputTokens: 0, modelCalls: 0 };
  for (const e of events) {
    if (e.type !== "ModelReplied") continue;
    s.modelCalls += 1;
    s.inputTokens += e.data.usage?.inputTokens ?? 0;
    s.outputTokens += e.data.usage?.outputTokens ?? 0;
  }
  return s;
};

const usageDiff = (
  what: string,
  got: UsageSum & { contexts?: number },
  want: UsageSum & { contexts?: number },
): string | null => {
  const keys = Object.keys(want) as (keyof typeof want)[];
  const d = keys.filter((k) => got[k] !== want[k]).map((k) => `${k} ${got[k]} ≠ ${want[k]}`);
  return d.length ? `${what}: ${d.join(", ")}` : null;
};

// ------------------------------------------------------------------------------------------ the runtime

export type InvariantOptions = {
  /** Check one delegation tree (fast, stays fast as the log grows); the whole log when omitted. */
  rootContextId?: string;
  /** Remembers the log between checks, for the append-only and parent-link checks. */
  memory?: LogMemory;
  /**
   * `scoped` (default with a root): the tree's events folded in memory equal the live projections of
   * the tree. `full` (default without): the runtime's `verify({ projections: true })`, a rebuild of the whole log
   * from zero compared row by row. `none`.
   */
  rebuild?: "scoped" | "full" | "none";
};

/** What the checks read: the contexts of the tree (or log), their streams, and what the projections say. */
export type TreeLog = {
  views: ContextView[];
  streams: Map<string, RecordedEvent[]>;
  events: RecordedEvent[];
  children: Map<string, string[]>;
};

/** Reads a delegation tree (or every context) through the runtime's queries. */
export const readTree = async (rt: Runtime, rootContextId?: string): Promise<TreeLog> => {
  const views = await rt.contexts(rootContextId ? { rootContextId } : undefined);
  const streams = new Map<string, RecordedEvent[]>();
  const children = new Map<string, string[]>();
  for (const c of views) {
    streams.set(c.id, await rt.events({ contextId: c.id }));
    children.set(c.id, await childIds(rt, c.id));
  }
  const events = [...streams.values()].flat().sort((a, b) => a.globalPosition - b.globalPosition);
  return { views, streams, events, children };
};

/** The children the runtime lists for a context, in creation order. */
const childIds = async (rt: Runtime, id: string): Promise<string[]> => (await rt.children(id)).map((k) => k.id);

/** Runs every check over the runtime (at rest) and returns the violations; empty when all hold. */
export const checkInvariants = async (rt: Runtime, options: InvariantOptions = {}): Promise<Violation[]> => {
  const tree = await readTree(rt, options.rootContextId);
  const { views, streams, events } = tree;
  const out: Violation[] = [];
  out.push(...checkLogShape(streams));
  if (options.memory) out.push(...options.memory.check(streams), ...options.memory.checkParents(views));

  // Every child a stream says it created is in the tree; a fork's copy of its source's call names the source's
  // child (a context of the source's tree, which the fork does not own).
  for (const e of events) {
    if (e.type === "SubordinateCalled" && !streams.has(e.data.childContextId)) {
      const first = streams.get(e.streamId)?.[0];
      const source = first?.type === "ContextCreated" ? first.data.forkedFrom?.contextId : undefined;
      if (source !== undefined && (await rt.context(e.data.childContextId))?.parentContextId === source) continue;
      out.push(
        v(
          "parent-links",
          e.streamId,
          `${at(e)} names child ${e.data.childContextId}, which the projections do not list in the tree`,
        ),
      );
    }
  }
  for (const c of views) {
    const stream = streams.get(c.id)!;
    out.push(...checkOneRunAtATime(c.id, stream));
    out.push(...checkStatus(c, stream));
    out.push(...checkTranscript(c.id, stream, await rt.history(c.id)));
    const { own } = await rt.usage(c.id);
    const d = usageDiff("own usage", own ?? NO_USAGE, sumUsage(stream));
    if (d) out.push(v("usage-rollup", c.id, d));
  }
  out.push(...checkNumbersAndDepths(views));
  out.push(...checkParentLinks(views, streams, tree.children));
  out.push(...checkNoRunOutlivesItsSuperior(events));
  out.push(...checkSuperiorsInTree(views, events));

  for (const root of views.filter((c) => c.parentContextId === null)) {
    const inTree = views.filter((c) => c.rootContextId === root.id);
    const rollup = (await rt.usage(root.id)).rollup ?? { ...NO_USAGE, contexts: 0 };
    const want = { ...sumUsage(inTree.flatMap((c) => streams.get(c.id)!)), contexts: inTree.length };
    const d = usageDiff("rollup", rollup, want);
    if (d) out.push(v("usage-rollup", root.id, d));
  }

  const rebuild = options.rebuild ?? (options.rootContextId ? "scoped" : "full");
  if (rebuild === "full") {
    const compared = (await rt.verify({ projections: true })).projections;
    if (compared === null) out.push(v("rebuild-equals-live", null, "the projections could not be folded from the log"));
    for (const d of compared?.differences.slice(0, 10) ?? [])
      out.push(v("rebuild-equals-live", null, `${d}: the live row differs from a rebuild of the log`));
  } else if (rebuild === "scoped") {
    out.push(...(await checkScopedRebuild(rt, tree)));
  }
  return out;
};

/**
 * A run's superior is a run of its own tree, in its parent: a fork (a root of its own) or any other context
 * never names a run of another tree as its caller.
 */
export const checkSuperiorsInTree = (views: readonly ContextView[], events: readonly RecordedEvent[]): Violation[] => {
  const byId = new Map(views.map((c) => [c.id, c]));
  const out: Violation[] = [];
  for (const e of events) {
    if (e.type !== "RunStarted" || e.data.superior === null) continue;
    const self = byId.get(e.streamId);
    const sup = e.data.superior;
    if (self && sup.contextId !== self.parentContextId) {
      const where =
        byId.get(sup.contextId)?.rootContextId === self.rootContextId
          ? "a context that is not its parent"
          : "a context of another tree";
      out.push(v("parent-links", e.streamId, `${at(e)} names superior run ${sup.runId} of ${sup.contextId}, ${where}`));
    }
  }
  return out;
};

/** Throws an `InvariantViolation` listing every violation, if any. */
export const assertInvariants = async (rt: Runtime, options: InvariantOptions = {}): Promise<void> => {
  const violations = await checkInvariants(rt, options);
  if (violations.length > 0) throw new InvariantViolation(violations);
};

/** Deep equality of JSON values, regardless of key order (JSONB reorders keys). */
const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
const canonical = (x: unknown): unknown =>
  Array.isArray(x)
    ? x.map(canonical)
    : x !== null && typeof x === "object"
      ? Object.fromEntries(
          Object.keys(x)
            .filter((k) => (x as Record<string, unknown>)[k] !== undefined)
            .sort()
            .map((k) => [k, canonical((x as Record<string, unknown>)[k])]),
        )
      : x;

/** The tree's events folded from zero, in memory, equal what the live projections hold for the tree. */
const checkScopedRebuild = async (rt: Runtime, tree: TreeLog): Promise<Violation[]> => {
  const out: Violation[] = [];
  const folded = foldSnapshot(tree.events, [contextsProjection, usageProjection, treeProjection, transcriptProjection]);
  const rows = (name: string) => new Map((folded[name] ?? []).map((r: SnapshotRow) => [r.key, r.state]));
  const contexts = rows("contexts");
  const usage = rows("usage");
  const treeRows = rows("tree");
  for (const c of tree.views) {
    if (!sameJson(c, contexts.get(c.id)))
      out.push(
        v(
          "rebuild-equals-live",
          c.id,
          `contexts: live ${JSON.stringify(c).slice(0, 300)} ≠ rebuilt ${JSON.stringify(contexts.get(c.id)).slice(0, 300)}`,
        ),
      );
    const u = (await rt.usage(c.id)).own;
    if (!sameJson(u, usage.get(c.id)))
      out.push(
        v("rebuild-equals-live", c.id, `usage: live ${JSON.stringify(u)} ≠ rebuilt ${JSON.stringify(usage.get(c.id))}`),
      );
    const kids = await childIds(rt, c.id);
    const rebuiltKids = (
      (treeRows.get(c.id) as { children?: { contextId: string }[] } | undefined)?.children ?? []
    ).map((k) => k.contextId);
    if (!sameJson(kids, rebuiltKids))
      out.push(
        v(
          "rebuild-equals-live",
          c.id,
          `tree: live children [${kids.join(", ")}] ≠ rebuilt [${rebuiltKids.join(", ")}]`,
        ),
      );
    const runs = (folded["transcript"] ?? []).map((r) => r.state as RunTranscript).filter((t) => t.contextId === c.id);
    const live = await rt.history(c.id);
    if (!sameJson(live, historyOf(runs)))
      out.push(
        v(
          "rebuild-equals-live",
          c.id,
          `transcript: live history of ${live.length} message(s) ≠ rebuilt ${historyOf(runs).length}`,
        ),
      );
  }
  return out;
};
