// What a log written by many runtime processes must show once they are done: each check returns its problems.
import type { RecordedEvent } from "../../src/events/schema.ts";
import { checkLogShape } from "../../src/testing/invariants.ts";
import { checkOneRunAtATime, openRunOf } from "../../src/testing/runInvariants.ts";

/** An event a process reported as committed: `ack <position> <streamId> <type>`. */
export type Ack = { by: string; position: number; streamId: string; type: string };

export const parseAck = (by: string, line: string): Ack | null => {
  const m = /^ack (\d+) (\S+) (\S+)$/.exec(line);
  return m ? { by, position: Number(m[1]), streamId: m[2]!, type: m[3]! } : null;
};

export const byStream = (events: readonly RecordedEvent[]): Map<string, RecordedEvent[]> => {
  const streams = new Map<string, RecordedEvent[]>();
  for (const e of [...events].sort((a, b) => a.globalPosition - b.globalPosition)) {
    const s = streams.get(e.streamId) ?? [];
    s.push(e);
    streams.set(e.streamId, s);
  }
  return streams;
};

/**
 * Over the whole log, at rest: stream versions are 1..n; per stream RunStarted and terminal events
 * alternate (no context ran twice at once) and no run is left open; every acknowledged event is there.
 */
export const checkClusterLog = (events: readonly RecordedEvent[], acks: readonly Ack[]): string[] => {
  const problems: string[] = [];
  const streams = byStream(events);
  for (const v of checkLogShape(streams)) problems.push(`[${v.invariant}] ${v.contextId}: ${v.detail}`);
  for (const [id, stream] of streams) {
    for (const v of checkOneRunAtATime(id, stream)) problems.push(`[${v.invariant}] ${id}: ${v.detail}`);
    const open = openRunOf(stream);
    if (open)
      problems.push(`[run-left-open] ${id}: run ${open.data.runId} (RunStarted@p${open.globalPosition}) never ended`);
  }
  const at = new Map(events.map((e) => [e.globalPosition, e]));
  for (const a of acks) {
    const e = at.get(a.position);
    if (!e)
      problems.push(
        `[ack-lost] ${a.by} acknowledged position ${a.position} (${a.type} of ${a.streamId}), which is not in the log`,
      );
    else if (e.streamId !== a.streamId || e.type !== a.type) {
      problems.push(
        `[ack-changed] ${a.by} acknowledged ${a.type} of ${a.streamId} at ${a.position}; the log has ${e.type} of ${e.streamId}`,
      );
    }
  }
  return problems;
};
