// One writer per active context: appends are serialized and carry the expected version, so the
// run, interventions and stops never interleave, and a foreign writer shows up as a ConcurrencyError.
import type { EventStore } from "../events/store.ts";
import type { DomainEvent, EventMetadata, RecordedEvent } from "../events/schema.ts";
import type { ContextId, EventId } from "../events/ids.ts";
import type { Clock } from "../events/clock.ts";

type Staged = { event: DomainEvent; metadata: Partial<EventMetadata> | undefined };

/**
 * Events that record an effect already over (a tool's result, the model's reply) can wait: they are
 * `stage`d and go out with the next append, which always precedes the next effect (a model call, a
 * tool run, the run's end). So a step costs one round trip to the database, not one per event.
 */
export class StreamWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private staged: Staged[] = [];
  /**
   * `opening`: a new stream's first events (a fresh child's ContextCreated), not yet on the log. They open the
   * stream's first append, whatever it is, and unlike staged events they are kept until an append takes them:
   * the stream's opening cannot be given up, since a caller's SubordinateCalled may already name it.
   */
  constructor(
    private readonly store: EventStore,
    readonly streamId: ContextId,
    private version: number,
    private readonly clock: Clock,
    private readonly onAppended: (facts: RecordedEvent[]) => void,
    private opening: DomainEvent[] = [],
  ) {}

  get currentVersion(): number {
    return this.version;
  }

  /** False while the stream's opening events wait for its first append. */
  get opened(): boolean {
    return this.opening.length === 0;
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

  /** After reading facts another process appended, the version the next append expects. */
  resetVersion(version: number): void {
    this.version = version;
  }

  /** Queues events to go out, in order, ahead of the next append of this stream. */
  stage(events: DomainEvent[], metadata?: Partial<EventMetadata>): void {
    for (const event of events) this.staged.push({ event, metadata });
  }

  private async appendNow(events: DomainEvent[], metadata?: Partial<EventMetadata>): Promise<RecordedEvent[]> {
    // Take the staged events now: more may be staged while the append is in flight, for the next one.
    // If the append fails they are gone with it: they described a state the log did not take (the stream
    // moved on, or the append was refused), and the run that staged them ends as failed.
    const taken = this.staged.splice(0);
    const opening = this.opening.map((event) => ({ event, metadata: undefined }));
    const all = [...opening, ...taken, ...events.map((event) => ({ event, metadata }))];
    if (all.length === 0) return [];
    const withIds = all.map(({ event, metadata: m }) => ({ ...event, eventId: this.clock.uuid() as EventId, metadata: m }));
    const expected = this.version === 0 ? "no_stream" : this.version;
    const result = await this.store.append(this.streamId, withIds, { expectedVersion: expected });
    // The rows as the log holds them (storable text, JSONB's key order, the store's time and schema
    // version): the actor, the transcript and the next model call see what a replay sees.
    const facts = result.events;
    this.opening = [];
    this.version = result.nextExpectedVersion;
    this.onAppended(facts);
    return facts;
  }
}
