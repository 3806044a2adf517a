// A provider's per-window allowance (requests or tokens) as a bucket whose tokens come back one window after use.
//
// Requirements:
// - At most `capacity` is taken within any `windowMs`, measured the strict way: a token taken for a call comes back
//   `windowMs` after that call ended (not after it started), so a provider that counts arrivals in a rolling window
//   never sees more than `capacity` in one, whatever the calls' latency.
// - A call's amount may be corrected when it ends (tokens: the estimate becomes the reply's real usage).
// - `nextFreeAt` says when enough will have come back, so the gate wakes then rather than polling.

/** One call's take, open until the call ends. */
export type Take = { amount: number; returnAt: number };

export class RollingBucket {
  private readonly takes: Take[] = [];
  private held = 0;

  constructor(
    readonly capacity: number,
    readonly windowMs: number,
  ) {}

  /** What may be taken now. */
  available(now: number): number {
    this.expire(now);
    return this.capacity - this.held;
  }

  /** Whether `amount` (at most the whole capacity: a larger call waits for a full bucket) fits now. */
  fits(amount: number, now: number): boolean {
    return this.available(now) >= Math.min(amount, this.capacity);
  }

  /** Takes `amount` for a call in flight: it comes back only after `end`. */
  take(amount: number): Take {
    const t: Take = { amount, returnAt: Number.POSITIVE_INFINITY };
    this.takes.push(t);
    this.held += amount;
    return t;
  }

  /** The call ended at `now`: its take (corrected to `amount` when given) comes back one window later. */
  end(take: Take, now: number, amount = take.amount): void {
    if (take.returnAt !== Number.POSITIVE_INFINITY) return;
    this.held += amount - take.amount;
    take.amount = amount;
    take.returnAt = now + this.windowMs;
  }

  /** When `amount` will fit, given what has ended; null while it waits on calls still in flight. */
  nextFreeAt(amount: number, now: number): number | null {
    this.expire(now);
    let short = Math.min(amount, this.capacity) - (this.capacity - this.held);
    if (short <= 0) return now;
    const ended = this.takes
      .filter((t) => t.returnAt !== Number.POSITIVE_INFINITY)
      .sort((a, b) => a.returnAt - b.returnAt);
    for (const t of ended) {
      short -= t.amount;
      if (short <= 0) return t.returnAt;
    }
    return null;
  }

  private expire(now: number): void {
    for (let i = this.takes.length - 1; i >= 0; i--) {
      const t = this.takes[i]!;
      if (t.returnAt <= now) {
        this.held -= t.amount;
        this.takes.splice(i, 1);
      }
    }
  }
}
