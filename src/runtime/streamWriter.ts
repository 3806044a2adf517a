// One writer per active context: appends are serialized and carry the expected version, so the
// run, interventions and stops never interleave, and a foreign writer shows up as a ConcurrencyError.
import type { EventStore } from "../events/store.ts";
import type { DomainEvent, EventMetadata, RecordedEvent } from "../events/schema.ts";
import type { ContextId, EventId } from "../events/ids.ts";
import type { Clock } from "./clock.ts";

export class StreamWriter {
  private tail: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly store: EventStore,
    readonly streamId: ContextId,
    private version: number,
    private readonly clock: Clock,
    private readonly onAppended: (facts: RecordedEvent[]) => void,
  ) {}

  get currentVersion(): number {
    return this.version;
  }

  /** Runs `fn` alone: no other append of this stream starts until it is done. */
  exclusive<T>(fn: (append: (events: DomainEvent[], metadata?: Partial<EventMetadata>) => Promise<RecordedEvent[]>) => Promise<T>): Promise<T> {
    const result = this.tail.then(() => fn((events, metadata) => this.appendNow(events, metadata)));
    this.tail = result.catch(() => undefined);
    return result;
  }

  append(events: DomainEvent[], metadata?: Partial<EventMetadata>): Promise<RecordedEvent[]> {
    return this.exclusive((append) => append(events, metadata));
  }

  private async appendNow(events: DomainEvent[], metadata?: Partial<EventMetadata>): Promise<RecordedEvent[]> {
    const withIds = events.map((e) => ({ ...e, eventId: this.clock.uuid() as EventId, metadata }));
    const expected = this.version === 0 ? "no_stream" : this.version;
    const result = await this.store.append(this.streamId, withIds, { expectedVersion: expected });
    const recordedAt = this.clock.now().toISOString();
    const facts = withIds.map(
      (e, i) =>
        ({
          type: e.type,
          data: e.data,
          globalPosition: result.positions[i]!,
          streamId: this.streamId,
          streamVersion: this.version + i + 1,
          eventId: e.eventId,
          schemaVersion: 1,
          metadata: { correlationId: null, causationId: null, actor: null, ...metadata },
          recordedAt,
        }) as RecordedEvent,
    );
    this.version = result.nextExpectedVersion;
    this.onAppended(facts);
    return facts;
  }
}
