// The runtime's gate in front of the model port: concurrency caps, one FIFO queue.
//
// Requirements:
// - At most `maxConcurrent` calls of the runtime are in flight at once, and at most a preset's own `maxConcurrent`
//   to that preset; a call beyond waits in one queue, in the order the calls arrived.
// - A waiter is admitted once its caps have room and no call queued before it for the same preset still waits
//   (FIFO per preset); a preset at its cap does not hold back calls to other presets.
// - A waiter whose signal aborts leaves the queue and takes nothing; one admitted in the same turn gives its place back.
// - A ticket is released exactly once (`done` is idempotent); its release admits the next waiter.
// - With nothing configured there is no gate (`callGate` returns null), so the hot path pays nothing.

/** The caps of one preset (its provider). */
export type ProviderLimits = { maxConcurrent?: number | undefined };

export type GateLimits = {
  /** Calls in flight at once across the runtime; none: no runtime-wide cap. */
  maxConcurrent?: number | undefined;
  /** By preset name. */
  providers: Readonly<Record<string, ProviderLimits>>;
};

/** An admitted call's place; `done` gives it back. */
export type Ticket = { readonly waitedMs: number; done(): void };

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

type Provider = { readonly limits: ProviderLimits; active: number };

type Waiter = {
  readonly provider: Provider | null;
  readonly enqueuedAt: number;
  ticket: Ticket | null;
  cancelled: boolean;
  resolve: ((t: Ticket) => void) | null;
};

export class CallGate {
  private active = 0;
  private readonly providers = new Map<string, Provider>();
  private readonly queue: Waiter[] = [];
  /** The most calls seen in flight at once (for tests and benchmarks). */
  peak = 0;

  constructor(
    private readonly limits: GateLimits,
    private readonly now: () => number = Date.now,
  ) {
    for (const [name, p] of Object.entries(limits.providers)) this.providers.set(name, { limits: p, active: 0 });
  }

  /** Calls in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /** Calls waiting now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** A place for a call to `preset` (null: a model given by name, under the runtime's cap only). */
  enter(preset: string | null): Entry {
    const provider = preset === null ? null : (this.providers.get(preset) ?? null);
    const waiter: Waiter = { provider, enqueuedAt: this.now(), ticket: null, cancelled: false, resolve: null };
    // FIFO: a call may pass only when nobody that competes with it waits already.
    if (this.queue.length === 0 && this.fits(provider)) return { ticket: this.admit(waiter) };
    const ahead = this.queue.length;
    this.queue.push(waiter);
    this.pump();
    // Only calls to other presets were waiting, held by their own caps: this one passes them.
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

  private fits(provider: Provider | null): boolean {
    if (this.limits.maxConcurrent !== undefined && this.active >= this.limits.maxConcurrent) return false;
    return provider?.limits.maxConcurrent === undefined || provider.active < provider.limits.maxConcurrent;
  }

  private admit(waiter: Waiter): Ticket {
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    if (waiter.provider) waiter.provider.active++;
    let released = false;
    const ticket: Ticket = {
      waitedMs: this.now() - waiter.enqueuedAt,
      done: () => {
        if (released) return;
        released = true;
        this.active--;
        if (waiter.provider) waiter.provider.active--;
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
    const held = new Set<Provider | null>();
    for (let i = 0; i < this.queue.length; ) {
      const waiter = this.queue[i]!;
      if (this.limits.maxConcurrent !== undefined && this.active >= this.limits.maxConcurrent) return;
      if (held.has(waiter.provider) || !this.fits(waiter.provider)) {
        held.add(waiter.provider);
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      const ticket = this.admit(waiter);
      waiter.resolve?.(ticket);
    }
  }
}

/** The gate a runtime needs for these caps, or null when none is set (calls then pass straight through). */
export const callGate = (limits: GateLimits, now?: () => number): CallGate | null => {
  const any = limits.maxConcurrent !== undefined || Object.values(limits.providers).some((p) => p.maxConcurrent !== undefined);
  return any ? new CallGate(limits, now) : null;
};
