// One writer per active context: appends are serialized and carry the expected version, so the
// run, interventions and stops never interleave, and a foreign writer shows up as a ConcurrencyError.
// Appends asked while the last one queued waits go out with it as one (a run's parallel jobs' records),
// in the order asked; an exclusive section keeps its place, since nothing asked after it joins a group before it.
//
// This is one of two layers that gather appends, and they gather different things. This one owns a stream's
// order: each append carries the version the one before it returned, so one stream's appends cannot be in
// flight together; joining them into one append (one version check) is the only way to send them at once.
// The store's appendBatcher.ts owns the database's messages: appends of different streams, each already
// holding its expected version, share one message and one commit. Neither can do the other's work: the batcher
// cannot know a stream's next version before its previous append answers, and this writer sees one stream.
import type { EventStore } from "../events/store.ts";
import type { DomainEvent, EventMetadata, RecordedEvent } from "../events/schema.ts";
import type { ContextId, EventId } from "../events/ids.ts";
import type { Clock } from "../events/clock.ts";

type Staged = { event: DomainEvent; metadata: Partial<EventMetadata> | undefined };
/** Appends asked while the one before them waited: they go out together (see `append`). */
type Group = {
  asks: { events: DomainEvent[]; metadata: Partial<EventMetadata> | undefined }[];
  done: Promise<RecordedEvent[][]>;
};

/**
 * Events that record an effect already over (a tool's result, the model's reply) can wait: they are
 * `stage`d and go out with the next append, which always precedes the next effect (a model call, a
 * tool run, the run's end). So a step costs one round trip to the database, not one per event.
 */
export class StreamWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private staged: Staged[] = [];
  /** The group of appends queued last and not started yet, which a new append joins. */
  private group: Group | null = null;
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
  exclusive<T>(
    fn: (append: (events: DomainEvent[], metadata?: Partial<EventMetadata>) => Promise<RecordedEvent[]>) => Promise<T>,
  ): Promise<T> {
    // Whatever is asked after this goes after it: a later append may not join a group queued before.
    this.group = null;
    const result = this.tail.then(() => fn((events, metadata) => this.appendNow(events, metadata)));
    this.tail = result.catch(() => undefined);
    return result;
  }

  /**
   * Appends `events`. Appends asked while the one queued last has not started yet join it: they go out as
   * one append, in the order they were asked, each answered with its own facts (or the group's error). A
   * run's parallel jobs each record their SubordinateCalled at once: one append for the seven that wait
   * behind the first, not seven in a row.
   */
  append(events: DomainEvent[], metadata?: Partial<EventMetadata>): Promise<RecordedEvent[]> {
    const open = this.group;
    if (open) {
      const index = open.asks.push({ events, metadata }) - 1;
      return open.done.then((answers) => answers[index]!);
    }
    const asks = [{ events, metadata }];
    const group: Group = { asks, done: this.tail.then(() => this.appendGroup(group)) };
    this.tail = group.done.catch(() => undefined);
    this.group = group;
    return group.done.then((answers) => answers[0]!);
  }

  /** One append of a group's asks, in order; each ask's facts are the last of the append's, in order. */
  private async appendGroup(group: Group): Promise<RecordedEvent[][]> {
    if (this.group === group) this.group = null;
    const { asks } = group;
    for (const ask of asks.slice(0, -1)) this.stage(ask.events, ask.metadata);
    const last = asks[asks.length - 1]!;
    const facts = await this.appendNow(last.events, last.metadata);
    const answers: RecordedEvent[][] = [];
    let end = facts.length;
    for (let i = asks.length - 1; i >= 0; i--) {
      const n = asks[i]!.events.length;
      answers[i] = facts.slice(end - n, end);
      end -= n;
    }
    return answers;
  }

  /** After reading facts another process appended, the version the next append expects. */
  resetVersion(version: number): void {
    this.version = version;
  }

  /** The events staged and not taken by an append yet, in order. */
  get stagedEvents(): readonly DomainEvent[] {
    return this.staged.map((s) => s.event);
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
    const withIds = all.map(({ event, metadata: m }) => ({
      ...event,
      eventId: this.clock.uuid() as EventId,
      metadata: m,
    }));
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
