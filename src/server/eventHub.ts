// One subscription to the log fanned out to every Server-Sent Events client, each with its own bounded queue.
// Requirements: a client resuming after position P gets every event after P exactly once, in order (backlog read
// from the log, then live events, joined by position); a slow client never holds up the log or other clients
// (the hub never waits on a client; a client whose queue overflows is cut off and may resume with Last-Event-ID);
// closing ends every stream. Live model deltas pass through as they come, never queued in the backlog nor counted
// as positions (they have none).
import type { RecordedEvent } from "../index.ts";
import { isLiveDelta, type LiveEvent } from "../runtime/liveDeltas.ts";
import type { Runtime } from "../index.ts";

/** How many undelivered events a client may lag behind before it is cut off. */
export const DEFAULT_CLIENT_QUEUE = 10_000;
const BACKLOG_PAGE = 500;

export type HubClient = {
  /** The next event for this client, or null once it has been cut off or the hub closed. */
  next(): Promise<LiveEvent | null>;
  /** Why the stream ended (null while it runs). */
  readonly endReason: "overflow" | "closed" | null;
  close(): void;
};

type Member = {
  contextId: string | undefined;
  /** Highest position handed to the client (backlog or live): later events at or below it are duplicates. */
  delivered: number;
  queue: LiveEvent[];
  waiting: ((e: LiveEvent | null) => void) | null;
  ended: "overflow" | "closed" | null;
  backlog: boolean;
};

export class EventHub {
  private readonly members = new Set<Member>();
  private unsubscribe: (() => void) | null = null;
  private closed = false;

  private constructor(
    private readonly rt: Runtime,
    private readonly maxQueue: number,
  ) {}

  static async open(rt: Runtime, options: { maxQueue?: number } = {}): Promise<EventHub> {
    const hub = new EventHub(rt, options.maxQueue ?? DEFAULT_CLIENT_QUEUE);
    hub.unsubscribe = await rt.subscribe((e) => hub.publish(e), { deltas: true });
    return hub;
  }

  get clientCount(): number {
    return this.members.size;
  }

  /** A client that gets every event after `after` (all of the log's if 0), optionally of one context only. */
  join(after: number, contextId?: string): HubClient {
    const m: Member = { contextId, delivered: after, queue: [], waiting: null, ended: this.closed ? "closed" : null, backlog: true };
    if (!this.closed) this.members.add(m);
    // Live events queue up from this moment; the backlog read below covers everything before them.
    const backlog = this.readBacklog(m).catch(() => this.end(m, "closed"));
    const hub = this;
    return {
      async next() {
        if (m.backlog) await backlog;
        for (;;) {
          if (m.ended) return null;
          const e = m.queue.shift();
          if (e && isLiveDelta(e)) return e;
          if (e) {
            if (e.globalPosition <= m.delivered) continue;
            m.delivered = e.globalPosition;
            return e;
          }
          const got = await new Promise<LiveEvent | null>((resolve) => (m.waiting = resolve));
          if (got === null) return null;
        }
      },
      get endReason() {
        return m.ended;
      },
      close: () => hub.end(m, "closed"),
    };
  }

  close(): void {
    this.closed = true;
    this.unsubscribe?.();
    for (const m of [...this.members]) this.end(m, "closed");
  }

  private async readBacklog(m: Member): Promise<void> {
    // Reads until the log has nothing after the cursor: by then every later event is in the live queue.
    let cursor = m.delivered;
    const stored: LiveEvent[] = [];
    for (;;) {
      const page = await this.rt.events({ after: cursor, limit: BACKLOG_PAGE });
      for (const e of page) if (this.wanted(m, e)) stored.push(e);
      if (page.length === 0) break;
      cursor = page.at(-1)!.globalPosition;
      if (page.length < BACKLOG_PAGE) break;
    }
    // Stored events go first; the live queue's copies of them are skipped by position in next().
    m.queue = stored.concat(m.queue);
    m.backlog = false;
    this.wake(m);
  }

  private publish(e: LiveEvent): void {
    for (const m of this.members) {
      if (!this.wanted(m, e)) continue;
      m.queue.push(e);
      if (m.queue.length > this.maxQueue) this.end(m, "overflow");
      else this.wake(m);
    }
  }

  private wanted(m: Member, e: LiveEvent): boolean {
    return m.contextId === undefined || (isLiveDelta(e) ? e.contextId : e.streamId) === m.contextId;
  }

  private wake(m: Member): void {
    if (m.backlog || !m.waiting) return;
    const w = m.waiting;
    m.waiting = null;
    const e = m.queue.shift();
    if (e) {
      m.queue.unshift(e);
      w(e);
    } else if (m.ended) w(null);
    else m.waiting = w;
  }

  private end(m: Member, reason: "overflow" | "closed"): void {
    if (!m.ended) m.ended = reason;
    m.queue = [];
    this.members.delete(m);
    const w = m.waiting;
    m.waiting = null;
    w?.(null);
  }
}
