// The settled horizon of a PostgreSQL log: one LISTEN connection per store wakes its subscribers, and
// a position is reported settled only once no transaction that could still commit below it is in flight.
//
// Requirements:
// - LISTEN before the first horizon read, so a commit between the two is never missed.
// - A lost connection is re-established with backoff, and the horizon is read again once back.
// - An unsettled fence is polled on a timer (a rolled-back transaction sends no notification).
import { NOTIFY_CHANNEL, type LogHorizon } from "./sql.ts";

/** What the LISTEN connection needs of a `pg` client; the store hands a real one (this file names no driver type). */
export type ListenClient = {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<unknown>;
  on(event: "error" | "end" | "notification", listener: (...args: never[]) => void): unknown;
};

/** While some transaction holds back the horizon, look again after this long, doubling up to the max. */
const RETRY_MIN_MS = 10;
const RETRY_MAX_MS = 500;
const RECONNECT_MAX_MS = 5_000;
/** How the connection that LISTENs shows in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = "actorzero-listen";

/**
 * The settled horizon of the log, shared by all subscriptions of one store: the highest position
 * below which no transaction is still in flight. A dedicated connection LISTENs; each notification
 * (or a timer, while an unsettled fence waits) asks actorzero_log_horizon again.
 */
export class LogTail {
  /** Every position up to here is final: committed events are visible, the rest never will be. */
  settled = 0;
  #candidate: { handed: number; fence: string } | undefined;
  #client: ListenClient | undefined;
  #started = false;
  #stopped = false;
  #polling = false;
  #again = false;
  #retryMs = RETRY_MIN_MS;
  #timer: NodeJS.Timeout | undefined;
  #reconnectMs = 100;

  constructor(
    /** A new, unconnected client for the LISTEN connection (the store owns the driver). */
    private readonly newClient: () => ListenClient,
    private readonly horizon: (values: unknown[]) => Promise<{ horizon: LogHorizon }[]>,
    /** Whether anyone reads: without subscribers, notifications are ignored. */
    private readonly wanted: () => boolean,
    private readonly onAdvance: () => void,
    /**
     * Whether a notification sent by the backend `processId` can be let pass without reading the horizon: the
     * store's own connections, while every subscriber reads only other processes' events (ownPositions.ts).
     */
    private readonly passes: (processId: number) => boolean = () => false,
  ) {}

  start() {
    if (this.#started) return;
    this.#started = true;
    void this.#listen();
  }

  /** Asks for the horizon again (coalesced: at most one query in flight, one more queued). */
  refresh() {
    if (this.#stopped || !this.wanted()) return;
    if (this.#polling) {
      this.#again = true;
      return;
    }
    void this.#poll();
  }

  async stop() {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  /** LISTEN first, then read the horizon: a commit between the two is then never missed. */
  async #listen() {
    while (!this.#stopped) {
      const client = this.newClient();
      const lost = new Promise<void>((resolve) => {
        client.on("error", () => resolve());
        client.on("end", () => resolve());
      });
      try {
        await client.connect();
        client.on("notification", (n: { processId?: number }) => {
          if (n.processId === undefined || !this.passes(n.processId)) this.refresh();
        });
        await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
        if (this.#stopped) {
          await client.end().catch(() => {});
          return;
        }
        this.#client = client;
        this.#reconnectMs = 100;
        this.refresh();
        await lost;
      } catch {
        await client.end().catch(() => {});
      }
      if (this.#stopped) return;
      // The connection is gone: notifications may be lost meanwhile, so look again once back.
      this.#client = undefined;
      await new Promise((r) => setTimeout(r, this.#reconnectMs));
      this.#reconnectMs = Math.min(this.#reconnectMs * 2, RECONNECT_MAX_MS);
    }
  }

  async #poll() {
    this.#polling = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    let failed = false;
    try {
      do {
        this.#again = false;
        const before = this.settled;
        const candidate = this.#candidate;
        const h = (await this.horizon([candidate?.fence ?? null]))[0]!.horizon;
        const handed = Number(h.handed);
        if (candidate && h.candidate_settled) {
          this.settled = Math.max(this.settled, candidate.handed);
          this.#candidate = undefined;
        }
        if (h.settled) {
          this.settled = Math.max(this.settled, handed);
          this.#candidate = undefined;
        } else if (this.#candidate === undefined && handed > this.settled) {
          // Keep the oldest waiting fence until it settles: replacing it with each newer one could
          // wait forever under a steady stream of appends.
          this.#candidate = { handed, fence: h.fence };
        }
        if (this.settled > before) {
          this.#retryMs = RETRY_MIN_MS;
          this.onAdvance();
        }
      } while (this.#again && !this.#stopped);
    } catch {
      failed = true;
    } finally {
      this.#polling = false;
    }
    if (this.#stopped) return;
    if (this.#candidate || failed) {
      // An in-flight transaction that rolls back, or one that is not an append, sends no
      // notification: look again on a timer until the fence settles.
      this.#timer = setTimeout(() => this.refresh(), this.#retryMs);
      this.#timer.unref();
      this.#retryMs = Math.min(this.#retryMs * 2, failed ? RECONNECT_MAX_MS : RETRY_MAX_MS);
    }
  }
}
