// The positions a store's own appends took, kept for its subscriptions that read only what other processes wrote.
//
// Requirements:
// - A position is known once its append has returned; a reader that has the settled horizon first waits for
//   the appends in flight at that moment (every own append holding a position up to it began before it was
//   read), so no own event up to the horizon is mistaken for another process's.
// - Leaving an own event in is harmless (the reader applied it already); leaving another's out never happens.
// - Positions every such reader has passed are forgotten: the set holds only what lies ahead of them.
// - The store's own commits need not wake such a reader (they notify from its own pool's backends), up to
//   OWN_UNREAD_MAX positions ahead of it; another process's commit, or a timer while a fence waits, does.
import type { AppendOutcome } from "./appendSql.ts";

/**
 * Own positions an othersOnly reader may hold unread before its store's own notifications read the horizon
 * again (a process that writes alone would otherwise never move its reader, and keep every position).
 */
export const OWN_UNREAD_MAX = 4096;

export class OwnPositions {
  readonly #positions = new Set<number>();
  /** Own appends in flight (settled, never rejecting). */
  readonly #inFlight = new Set<Promise<void>>();

  /** Notes the positions the append takes; answers with its outcome as sent. */
  note(sent: Promise<AppendOutcome>): Promise<AppendOutcome> {
    const noted = sent.then((o) => {
      if (!o.conflict && !o.stored) for (const p of o.positions) this.#positions.add(Number(p));
      return o;
    });
    const settled = noted.then(
      () => undefined,
      () => undefined,
    );
    this.#inFlight.add(settled);
    void settled.then(() => this.#inFlight.delete(settled));
    return noted;
  }

  /** Resolves once the appends in flight now have returned. */
  async known(): Promise<void> {
    if (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  /** Whether every position after `after` up to `until` is an own append's: nothing there to read. */
  all(after: number, until: number): boolean {
    if (until - after > this.#positions.size) return false;
    for (let p = after + 1; p <= until; p++) if (!this.#positions.has(p)) return false;
    return true;
  }

  /** The own positions after `after` up to `until`. */
  within(after: number, until: number): number[] {
    const out: number[] = [];
    for (const p of this.#positions) if (p > after && p <= until) out.push(p);
    return out;
  }

  /** Forgets the positions at or below `passed`. */
  forget(passed: number): void {
    for (const p of this.#positions) if (p <= passed) this.#positions.delete(p);
  }

  get size(): number {
    return this.#positions.size;
  }

  clear(): void {
    this.#positions.clear();
  }
}
