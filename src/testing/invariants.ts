// The lifecycle invariants (DESIGN §3–§5) as checks over a runtime's log and projections: each returns the violations it finds.
//
// Run them at rest (no run between two appends): `await assertInvariants(rt, { rootContextId })`.
// Pure checks take streams or views, so they also run over a log read any other way. This file holds the
// violation type and the log's own shape; runInvariants.ts, treeInvariants.ts and transcriptInvariant.ts
// the rest.
import type { RecordedEvent } from "../events/schema.ts";
import { RUN_TERMINAL_TYPES } from "../events/schema.ts";
import type { ContextView } from "../projections/contexts.ts";

export type InvariantName =
  | "log-shape"
  | "append-only"
  | "one-run-at-a-time"
  | "status-follows-lifecycle"
  | "numbers-and-depths"
  | "parent-links"
  | "no-run-outlives-its-superior"
  | "transcript"
  | "usage-rollup"
  | "rebuild-equals-live";

export type Violation = { invariant: InvariantName; contextId: string | null; detail: string };

/** Thrown by `assertInvariants`: every violation, one per line. */
export class InvariantViolation extends Error {
  constructor(readonly violations: Violation[]) {
    super(
      `${violations.length} invariant violation(s):\n${violations.map((v) => `  [${v.invariant}] ${v.contextId ? `${v.contextId}: ` : ""}${v.detail}`).join("\n")}`,
    );
    this.name = "InvariantViolation";
  }
}

const terminalTypes: ReadonlySet<string> = new Set(RUN_TERMINAL_TYPES);
export const isTerminal = (e: RecordedEvent) => terminalTypes.has(e.type);
export const runIdOf = (e: RecordedEvent): string | null => {
  const d = e.data as { runId?: string | null };
  return typeof d.runId === "string" ? d.runId : null;
};
export const violation = (invariant: InvariantName, contextId: string | null, detail: string): Violation => ({
  invariant,
  contextId,
  detail,
});
const v = violation;
export const at = (e: RecordedEvent) => `${e.type}@v${e.streamVersion}/p${e.globalPosition}`;

// ------------------------------------------------------------------------------------------ log shape

/**
 * Stream versions are 1..n with no gap, the first and only ContextCreated opens the stream and names
 * it, positions increase within a stream and are unique across streams.
 */
export const checkLogShape = (streams: ReadonlyMap<string, readonly RecordedEvent[]>): Violation[] => {
  const out: Violation[] = [];
  const seen = new Map<number, string>();
  for (const [id, events] of streams) {
    events.forEach((e, i) => {
      if (e.streamId !== id) out.push(v("log-shape", id, `${at(e)} belongs to stream ${e.streamId}`));
      if (e.streamVersion !== i + 1)
        out.push(v("log-shape", id, `${at(e)} is event #${i + 1} of its stream: versions must be 1..n with no gap`));
      if (i > 0 && e.globalPosition <= events[i - 1]!.globalPosition)
        out.push(v("log-shape", id, `${at(e)} does not come after ${at(events[i - 1]!)}`));
      if ((i === 0) !== (e.type === "ContextCreated"))
        out.push(v("log-shape", id, `${at(e)}: ContextCreated must be the first event and only the first`));
      if (e.type === "ContextCreated" && e.data.contextId !== id)
        out.push(v("log-shape", id, `ContextCreated names ${e.data.contextId}`));
      const other = seen.get(e.globalPosition);
      if (other !== undefined && other !== id)
        out.push(v("log-shape", id, `position ${e.globalPosition} is also used by stream ${other}`));
      seen.set(e.globalPosition, id);
    });
  }
  return out;
};

/**
 * What was read once is read again, unchanged, as a prefix: the log is append-only. Keep one
 * `LogMemory` across checks (`checkInvariants(rt, { memory })`).
 */
export class LogMemory {
  private readonly streams = new Map<string, { eventId: string; position: number; type: string }[]>();
  private readonly parents = new Map<string, string | null>();

  check(streams: ReadonlyMap<string, readonly RecordedEvent[]>): Violation[] {
    const out: Violation[] = [];
    for (const [id, events] of streams) {
      const before = this.streams.get(id) ?? [];
      if (events.length < before.length)
        out.push(v("append-only", id, `the stream shrank from ${before.length} to ${events.length} events`));
      before.forEach((b, i) => {
        const e = events[i];
        if (e && (e.eventId !== b.eventId || e.globalPosition !== b.position || e.type !== b.type)) {
          out.push(
            v(
              "append-only",
              id,
              `event v${i + 1} changed: was ${b.type}@p${b.position} (${b.eventId}), now ${at(e)} (${e.eventId})`,
            ),
          );
        }
      });
      this.streams.set(
        id,
        events.map((e) => ({ eventId: e.eventId, position: e.globalPosition, type: e.type })),
      );
    }
    return out;
  }

  /** A context's parent, once seen, is the same forever. */
  checkParents(views: readonly ContextView[]): Violation[] {
    const out: Violation[] = [];
    for (const view of views) {
      if (this.parents.has(view.id) && this.parents.get(view.id) !== view.parentContextId) {
        out.push(
          v("parent-links", view.id, `parent changed from ${this.parents.get(view.id)} to ${view.parentContextId}`),
        );
      }
      this.parents.set(view.id, view.parentContextId);
    }
    return out;
  }
}
