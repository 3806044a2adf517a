// Builds recorded events by hand for example tests: positions, stream versions and times as a store would assign them.
import type { ContextId, EventId } from "../events/ids.ts";
import type { DomainEvent, RecordedEvent } from "../events/schema.ts";

export type LogBuilder = {
  /** Records `event` in `streamId` and returns it as the log would read it back. */
  add(streamId: string, event: DomainEvent): RecordedEvent;
  readonly events: RecordedEvent[];
};

/** @example const log = logBuilder(); log.add(id, { type: "RunStarted", data: { ... } }); transcriptOf(log.events) */
export const logBuilder = (start = "2026-01-01T00:00:00.000Z"): LogBuilder => {
  const events: RecordedEvent[] = [];
  const versions = new Map<string, number>();
  const base = Date.parse(start);
  return {
    events,
    add(streamId, event) {
      const version = (versions.get(streamId) ?? 0) + 1;
      versions.set(streamId, version);
      const position = events.length + 1;
      const recorded = {
        ...event,
        globalPosition: position,
        streamId: streamId as ContextId,
        streamVersion: version,
        eventId: `00000000-0000-4000-8000-${position.toString(16).padStart(12, "0")}` as EventId,
        schemaVersion: 1,
        metadata: { correlationId: null, causationId: null, actor: null },
        recordedAt: new Date(base + position * 1000).toISOString(),
      } as RecordedEvent;
      events.push(recorded);
      return recorded;
    },
  };
};
