// One subscription to the log fanned out to every Server-Sent Events client, each with its own bounded queue.
// Requirements: a client resuming after position P gets every event after P exactly once, in order (the log read
// page by page as the client takes events, then live events, joined by position); a client never holds more than
// `maxQueue` undelivered events in memory, backlog pages included (a client far behind holds one page, read only
// when it has taken the one before); a slow client never holds up the log or other clients (the hub never waits on
// a client; a live client whose queue overflows is cut off); a client that has not asked for its next event for
// `stallMs` (its connection is not draining) is cut off; both may resume with Last-Event-ID; closing ends every
// stream. Live model deltas pass through as they come while a client is live, never queued behind the backlog nor
// counted as positions (they have none); a client still reading the backlog skips them (their run's final
// `ModelReplied` is on the log it is reading).
import type { RecordedEvent } from "../events/schema.ts";
import { isLiveDelta, type LiveEvent } from "../runtime/liveDeltas.ts";
import type { Runtime } from "../runtime/api.ts";

/** How many undelivered events a client may hold (backlog page or live) before it is cut off. */
export const DEFAULT_CLIENT_QUEUE = 10_000;
/** How long a client may go without taking its next event before it is cut off. */
export const DEFAULT_STALL_MS = 30_000;
/** Backlog events read per page: small, since each far-behind client holds one page while it drains it. */
const BACKLOG_PAGE = 100;

export type EndReason = "overflow" | "stalled" | "closed";

export type HubClient = {
  /** The next event for this client, or null once it has been cut off or the hub closed. */
  next(): Promise<LiveEvent | null>;
  /** The next event if one is in memory now, else null (never reads the log nor waits): to send several at once. */
  ready(): LiveEvent | null;
  /** Why the stream ended (null while it runs). */
  readonly endReason: EndReason | null;
  /** Settles with the reason once the stream ends, however it ends. */
  readonly ended: Promise<EndReason>;
  /** Undelivered events this client holds in memory now (never more than the hub's `maxQueue`). */
  readonly held: number;
  close(): void;
};

type Member = {
  contextId: string | undefined;
  /** Highest position handed to the client (backlog or live): later events at or below it are duplicates. */
  delivered: number;
  /** Highest position read from the log: the next backlog page starts after it. */
  cursor: number;
  /** Undelivered events: a backlog page, then (once live) what was published since. */
  queue: LiveEvent[];
  /** False while the log still has events past `cursor`: published events are skipped (the log is read instead). */
  live: boolean;
  waiting: ((e: LiveEvent | null) => void) | null;
  /** Time the client last took an event without asking for the next; null while it waits in next(). */
  idleSince: number | null;
  ended: EndReason | null;
  markEnded: (reason: EndReason) => void;
};

export class EventHub {
  private readonly members = new Set<Member>();
  private unsubscribe: (() => void) | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly pageSize: number;

  private constructor(
    private readonly rt: Runtime,
    private readonly maxQueue: number,
    private readonly stallMs: number,
  ) {
    this.pageSize = Math.max(1, Math.min(BACKLOG_PAGE, maxQueue));
  }

  static async open(rt: Runtime, options: { maxQueue?: number; stallMs?: number } = {}): Promise<EventHub> {
    const hub = new EventHub(rt, options.maxQueue ?? DEFAULT_CLIENT_QUEUE, options.stallMs ?? DEFAULT_STALL_MS);
    hub.unsubscribe = await rt.subscribe((e) => hub.publish(e), { deltas: true });
    // A sweep a few times per stall period: one timer for all clients, not one per event written.
    hub.sweeper = setInterval(() => hub.sweep(), Math.max(10, Math.floor(hub.stallMs / 4)));
    hub.sweeper.unref();
    return hub;
  }

  get clientCount(): number {
    return this.members.size;
  }

  /** A client that gets every event after `after` (all of the log's if 0), optionally of one context only. */
  join(after: number, contextId?: string): HubClient {
    let markEnded!: (reason: EndReason) => void;
    const ended = new Promise<EndReason>((resolve) => (markEnded = resolve));
    const m: Member = {
      contextId,
      delivered: after,
      cursor: after,
      queue: [],
      live: false,
      waiting: null,
      idleSince: Date.now(),
      ended: null,
      markEnded,
    };
    if (this.closed) this.end(m, "closed");
    else this.members.add(m);
    const hub = this;
    return {
      async next() {
        m.idleSince = null;
        const e = await hub.take(m);
        if (e !== null) m.idleSince = Date.now();
        return e;
      },
      ready() {
        const e = m.ended ? null : hub.queued(m);
        if (e !== null) m.idleSince = Date.now();
        return e;
      },
      get endReason() {
        return m.ended;
      },
      ended,
      get held() {
        return m.queue.length;
      },
      close: () => hub.end(m, "closed"),
    };
  }

  close(): void {
    this.closed = true;
    this.unsubscribe?.();
    if (this.sweeper) clearInterval(this.sweeper);
    for (const m of [...this.members]) this.end(m, "closed");
  }

  /** The next queued event not delivered yet, or null. */
  private queued(m: Member): LiveEvent | null {
    for (let e = m.queue.shift(); e; e = m.queue.shift()) {
      if (isLiveDelta(e)) return e;
      if (e.globalPosition <= m.delivered) continue;
      m.delivered = e.globalPosition;
      return e;
    }
    return null;
  }

  private async take(m: Member): Promise<LiveEvent | null> {
    for (;;) {
      if (m.ended) return null;
      const e = this.queued(m);
      if (e) return e;
      if (!m.live) {
        try {
          await this.readPage(m);
        } catch {
          this.end(m, "closed");
        }
        continue;
      }
      const got = await new Promise<LiveEvent | null>((resolve) => (m.waiting = resolve));
      if (got === null) return null;
    }
  }

  /** The next page of the backlog; at the log's end the client goes live. */
  private async readPage(m: Member): Promise<void> {
    // Live from before the read: an event the read misses was published after this line, so it is queued; one
    // both read and queued is skipped by position in take().
    m.live = true;
    m.queue = [];
    const page = await this.rt.eventsPage({ after: m.cursor, limit: this.pageSize });
    if (m.ended) return;
    const wanted: LiveEvent[] = page.events.filter((e) => this.wanted(m, e));
    if (page.events.length > 0) m.cursor = page.events.at(-1)!.globalPosition;
    if (page.next !== null) {
      // More on the log: what was published meanwhile is read again with the next page.
      m.live = false;
      m.queue = wanted;
      return;
    }
    const fresh = m.queue.filter((e) => isLiveDelta(e) || e.globalPosition > m.cursor);
    m.queue = wanted.concat(fresh);
    if (m.queue.length > this.maxQueue) this.end(m, "overflow");
  }

  private publish(e: LiveEvent): void {
    for (const m of this.members) {
      if (!m.live || !this.wanted(m, e)) continue;
      m.queue.push(e);
      if (m.queue.length > this.maxQueue) this.end(m, "overflow");
      else this.wake(m);
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const m of [...this.members])
      if (m.idleSince !== null && now - m.idleSince > this.stallMs) this.end(m, "stalled");
  }

  private wanted(m: Member, e: LiveEvent | RecordedEvent): boolean {
    return m.contextId === undefined || (isLiveDelta(e) ? e.contextId : e.streamId) === m.contextId;
  }

  private wake(m: Member): void {
    const w = m.waiting;
    if (!w || m.queue.length === 0) return;
    m.waiting = null;
    w(m.queue[0]!);
  }

  private end(m: Member, reason: EndReason): void {
    if (!m.ended) {
      m.ended = reason;
      m.markEnded(reason);
    }
    m.queue = [];
    this.members.delete(m);
    const w = m.waiting;
    m.waiting = null;
    w?.(null);
  }
}
