// The runtime's gate in front of the model port: concurrency caps, provider rate limits and 429 pauses, one FIFO queue.
//
// Requirements:
// - At most `maxConcurrent` calls of the runtime are in flight at once, and at most a preset's own `maxConcurrent`
//   to that preset; a call beyond waits in one queue, in the order the calls arrived.
// - A preset's `requestsPerMinute` and `tokensPerMinute` are rolling buckets (rollingBucket.ts) shared by every
//   context of the runtime, counted over the preset's `rateWindowMs` (default a minute; the limit scaled to it).
// - A 429 pauses its preset for every caller until its Retry-After (or the delay the loop chose) has passed; then
//   calls go one at a time, twice as many after each reply, until the provider no longer refuses. A call admitted
//   before the 429 came back but not sent yet waits out the pause too (`unpaused`).
// - A waiter is admitted once everything above has room and no call queued before it for the same preset still
//   waits (FIFO per preset); a preset that is held does not hold back calls to other presets. A retry after a 429
//   goes before calls that have not been sent yet, so no call starves behind newcomers.
// - A waiter whose signal aborts leaves the queue and takes nothing; one admitted in the same turn gives its place back.
// - A ticket is released exactly once (`done` is idempotent); its release admits the next waiters, and a timer wakes
//   the queue when a pause ends or a bucket refills.
// - Every request sent takes its share of the buckets: a place that sends more than one (a compaction's summary
//   calls before the call they served) asks for each further share (`another`) and waits for it like a retry.
import { RollingBucket, type Take } from "./rollingBucket.ts";

/** The limits of one preset (its provider). */
export type ProviderLimits = {
  maxConcurrent?: number | undefined;
  requestsPerMinute?: number | undefined;
  tokensPerMinute?: number | undefined;
  /** The window the provider counts its limits over; the per-minute limits are scaled to it. Default 60 000. */
  rateWindowMs?: number | undefined;
};

export type GateLimits = {
  /** Calls in flight at once across the runtime; none: no runtime-wide cap. */
  maxConcurrent?: number | undefined;
  /** By preset name. */
  providers: Readonly<Record<string, ProviderLimits>>;
};

/** How an admitted call ended, for the preset's buckets and pause. */
export type CallOutcome =
  | { kind: "replied"; usage: { inputTokens: number; outputTokens: number } | null }
  | { kind: "rate_limited"; pauseMs: number }
  | { kind: "failed" };

/** An admitted call's place; `done` gives it back. */
export type Ticket = {
  readonly waitedMs: number;
  done(outcome?: CallOutcome): void;
  /**
   * Another request sent under this place (a compaction's summaries, then the call they served): null for the
   * place's first, which its admission paid for; else the last request's share comes back a window after now,
   * and this one waits for its own share of the preset's buckets (and any 429 pause) ahead of calls not sent yet.
   */
  another(tokens: number, signal?: AbortSignal): Promise<void> | null;
  /**
   * Null when the request may leave now (nearly always); else it resolves once a 429 pause that began after this
   * place was admitted (another call's) has ended, or `signal` aborts: an admitted request not sent yet waits too.
   */
  unpaused(signal?: AbortSignal): Promise<void> | null;
};

/** What `enter` answers: a place at once, or a place in the queue. */
export type Entry =
  | { readonly ticket: Ticket }
  | {
      /** Calls queued before this one. */
      readonly ahead: number;
      /** Resolves with the ticket once admitted; after `signal` aborts it never resolves and the place is given up. */
      admitted(signal?: AbortSignal): Promise<Ticket>;
      /** Leaves the queue (or gives back a place admitted meanwhile). */
      cancel(): void;
    };

export const MINUTE_MS = 60_000;
/** After a 429, calls let through at once double with each reply; past this the provider is taken as recovered. */
const RECOVERED = 256;

type Provider = {
  readonly limits: ProviderLimits;
  active: number;
  readonly requests: RollingBucket | null;
  readonly tokens: RollingBucket | null;
  pausedUntil: number;
  /** Calls let through at once since the last 429 (Infinity when the provider has not refused). */
  window: number;
};

type Waiter = {
  readonly provider: Provider;
  readonly tokens: number;
  readonly retry: boolean;
  /** A further request of an admitted place: it needs bucket room only (the place holds its caps), and this takes it. */
  readonly grant?: () => void;
  readonly enqueuedAt: number;
  ticket: Ticket | null;
  cancelled: boolean;
  resolve: ((t: Ticket) => void) | null;
};

const perWindow = (perMinute: number | undefined, windowMs: number): number | null =>
  perMinute === undefined ? null : Math.max(1, Math.floor((perMinute * windowMs) / MINUTE_MS));

const providerOf = (limits: ProviderLimits): Provider => {
  const windowMs = limits.rateWindowMs ?? MINUTE_MS;
  const requests = perWindow(limits.requestsPerMinute, windowMs);
  const tokens = perWindow(limits.tokensPerMinute, windowMs);
  return {
    limits,
    active: 0,
    requests: requests === null ? null : new RollingBucket(requests, windowMs),
    tokens: tokens === null ? null : new RollingBucket(tokens, windowMs),
    pausedUntil: 0,
    window: Number.POSITIVE_INFINITY,
  };
};

/** A model given by name (no preset): only the runtime's cap holds it, and its 429s pause one shared entry. */
const BY_NAME = "\u0000by-name";

export class CallGate {
  private active = 0;
  private readonly providers = new Map<string, Provider>();
  private readonly queue: Waiter[] = [];
  private timer: { at: number; handle: ReturnType<typeof setTimeout> } | null = null;
  /** The most calls seen in flight at once (for tests and benchmarks). */
  peak = 0;

  constructor(
    private readonly limits: GateLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Calls in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /** Calls waiting now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Whether calls to `preset` count tokens against a `tokensPerMinute` (so the caller counts them first). */
  countsTokens(preset: string | null): boolean {
    return preset !== null && this.limits.providers[preset]?.tokensPerMinute !== undefined;
  }

  /**
   * A place for a call to `preset` (null: a model given by name). `tokens`: the request's counted input, for a
   * `tokensPerMinute`; `retry`: the call is retried after a 429 (it goes before calls not sent yet).
   */
  enter(preset: string | null, opts: { tokens?: number; retry?: boolean } = {}): Entry {
    const waiter: Waiter = {
      provider: this.provider(preset),
      tokens: opts.tokens ?? 0,
      retry: opts.retry === true,
      enqueuedAt: this.now(),
      ticket: null,
      cancelled: false,
      resolve: null,
    };
    // FIFO: a call may pass only when nobody that competes with it waits already.
    if (this.queue.length === 0 && this.fits(waiter, this.now())) return { ticket: this.admit(waiter) };
    const at = waiter.retry ? this.queue.findIndex((w) => !w.retry) : -1;
    if (at >= 0) this.queue.splice(at, 0, waiter);
    else this.queue.push(waiter);
    const ahead = at >= 0 ? at : this.queue.length - 1;
    this.pump();
    // Only calls held by their own presets' limits were waiting: this one passes them.
    if (waiter.ticket) return { ticket: waiter.ticket };
    const cancel = () => {
      if (waiter.cancelled) return;
      waiter.cancelled = true;
      if (waiter.ticket) waiter.ticket.done();
      else this.remove(waiter);
    };
    return {
      ahead,
      cancel,
      admitted: (signal) =>
        new Promise<Ticket>((resolve) => {
          if (signal?.aborted) return cancel();
          if (waiter.ticket) return resolve(waiter.ticket);
          signal?.addEventListener("abort", cancel, { once: true });
          waiter.resolve = (t) => {
            signal?.removeEventListener("abort", cancel);
            resolve(t);
          };
        }),
    };
  }

  private provider(preset: string | null): Provider {
    const key = preset ?? BY_NAME;
    let p = this.providers.get(key);
    if (!p) this.providers.set(key, (p = providerOf((preset !== null && this.limits.providers[preset]) || {})));
    return p;
  }

  private fits(w: Waiter, now: number): boolean {
    const p = w.provider;
    if (w.grant === undefined) {
      if (this.limits.maxConcurrent !== undefined && this.active >= this.limits.maxConcurrent) return false;
      if (p.limits.maxConcurrent !== undefined && p.active >= p.limits.maxConcurrent) return false;
      if (p.active >= p.window) return false;
    }
    if (now < p.pausedUntil) return false;
    return (p.requests === null || p.requests.fits(1, now)) && (p.tokens === null || p.tokens.fits(w.tokens, now));
  }

  /** When a held waiter may fit by time alone (a pause ending, a bucket refilling); null when only a release can help. */
  private wakeAt(w: Waiter, now: number): number | null {
    const p = w.provider;
    const request = p.requests?.nextFreeAt(1, now);
    const tokens = p.tokens?.nextFreeAt(w.tokens, now);
    if (request === null || tokens === null) return null;
    const t = Math.max(p.pausedUntil, request ?? now, tokens ?? now);
    return t > now ? t : null;
  }

  private admit(waiter: Waiter): Ticket {
    const p = waiter.provider;
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    p.active++;
    let request: Take | null = p.requests?.take(1) ?? null;
    let tokens: Take | null = p.tokens?.take(waiter.tokens) ?? null;
    let released = false;
    let sent = 0;
    const ticket: Ticket = {
      waitedMs: this.now() - waiter.enqueuedAt,
      unpaused: (signal) => {
        if (released || p.pausedUntil <= this.now()) return null;
        return (async () => {
          for (let wait = p.pausedUntil - this.now(); wait > 0 && !signal?.aborted; wait = p.pausedUntil - this.now()) {
            await new Promise<void>((resolve) => {
              const end = () => (clearTimeout(timer), signal?.removeEventListener("abort", end), resolve());
              const timer = setTimeout(end, wait);
              signal?.addEventListener("abort", end, { once: true });
            });
          }
        })();
      },
      another: (amount, signal) => {
        if (sent++ === 0 || released) return null;
        const now = this.now();
        if (request) p.requests!.end(request, now);
        if (tokens) p.tokens!.end(tokens, now);
        const grant = () => {
          request = p.requests?.take(1) ?? null;
          tokens = p.tokens?.take(amount) ?? null;
        };
        const again: Waiter = {
          provider: p,
          tokens: amount,
          retry: true,
          grant,
          enqueuedAt: now,
          ticket: null,
          cancelled: false,
          resolve: null,
        };
        if (this.fits(again, now)) return (grant(), null);
        return new Promise<void>((resolve) => {
          const at = this.queue.findIndex((w) => !w.retry);
          this.queue.splice(at >= 0 ? at : this.queue.length, 0, again);
          const cancel = () => ((again.cancelled = true), this.remove(again), resolve());
          if (signal?.aborted) return cancel();
          signal?.addEventListener("abort", cancel, { once: true });
          again.resolve = () => (signal?.removeEventListener("abort", cancel), resolve());
          this.pump();
        });
      },
      done: (outcome = { kind: "failed" }) => {
        if (released) return;
        released = true;
        const now = this.now();
        this.active--;
        p.active--;
        if (request) p.requests!.end(request, now);
        if (tokens)
          p.tokens!.end(
            tokens,
            now,
            outcome.kind === "replied" && outcome.usage
              ? outcome.usage.inputTokens + outcome.usage.outputTokens
              : undefined,
          );
        if (outcome.kind === "rate_limited") {
          p.pausedUntil = Math.max(p.pausedUntil, now + outcome.pauseMs);
          p.window = 1;
        } else if (outcome.kind === "replied" && p.window !== Number.POSITIVE_INFINITY) {
          p.window = p.window * 2 >= RECOVERED ? Number.POSITIVE_INFINITY : p.window * 2;
        }
        this.pump();
      },
    };
    waiter.ticket = ticket;
    return ticket;
  }

  private remove(waiter: Waiter): void {
    const i = this.queue.indexOf(waiter);
    if (i >= 0) this.queue.splice(i, 1);
    // A waiter that left may have held back others of its preset.
    this.pump();
  }

  /** Admits every waiter that fits, in queue order; a preset whose first waiter does not fit holds its later ones back. */
  private pump(): void {
    const now = this.now();
    const held = new Set<Provider>();
    let wake: number | null = null;
    for (let i = 0; i < this.queue.length;) {
      const waiter = this.queue[i]!;
      if (held.has(waiter.provider) || !this.fits(waiter, now)) {
        if (!held.has(waiter.provider)) {
          held.add(waiter.provider);
          const at = this.wakeAt(waiter, now);
          if (at !== null && (wake === null || at < wake)) wake = at;
        }
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      if (waiter.grant) {
        waiter.grant();
        (waiter.resolve as (() => void) | null)?.();
        continue;
      }
      const ticket = this.admit(waiter);
      waiter.resolve?.(ticket);
    }
    this.schedule(wake);
  }

  /** One timer, at the earliest moment a held waiter may fit by time; none when nothing waits on time. */
  private schedule(at: number | null): void {
    if (this.timer && (at === null || this.timer.at !== at)) {
      clearTimeout(this.timer.handle);
      this.timer = null;
    }
    if (at === null || this.timer) return;
    const handle = setTimeout(
      () => {
        this.timer = null;
        this.pump();
      },
      Math.max(0, at - this.now()),
    );
    this.timer = { at, handle };
  }
}
