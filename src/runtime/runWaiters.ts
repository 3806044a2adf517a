// The waiters of one context's runs: who awaits a run's end (a caller of `start`, a parent's call_subordinate).
//
// Requirements:
// - Each run has one promise, made by the first who asks (before or after the run ends).
// - A run's answer is kept until the next run's, for a waiter that asks just after; older ones are let go.
// - On close, every waiter not answered is rejected as "closed", saying whether its run stays parked in the log.
import type { RunOutcome } from "../projections/runOutcome.ts";
import { RuntimeError } from "./errors.ts";

type Waiter = { promise: Promise<RunOutcome>; resolve: (o: RunOutcome) => void; reject: (e: Error) => void };

export class RunWaiters {
  readonly #byRun = new Map<string, Waiter>();
  #lastAnswered: string | null = null;

  constructor(private readonly contextId: string) {}

  /** The waiters by run id (read-only). */
  get byRun(): ReadonlyMap<string, { readonly promise: Promise<RunOutcome> }> {
    return this.#byRun;
  }

  /** The end of run `runId`, once answered. */
  of(runId: string): Promise<RunOutcome> {
    let entry = this.#byRun.get(runId);
    if (!entry) {
      let resolve!: (o: RunOutcome) => void;
      let reject!: (e: Error) => void;
      const promise = new Promise<RunOutcome>((res, rej) => ((resolve = res), (reject = rej)));
      entry = { promise, resolve, reject };
      this.#byRun.set(runId, entry);
    }
    return entry.promise;
  }

  /** Answers the waiters of `outcome.runId`; the answer is kept until the next run's. */
  answer(outcome: RunOutcome): void {
    const { runId } = outcome;
    void this.of(runId);
    this.#byRun.get(runId)!.resolve(outcome);
    if (this.#lastAnswered !== null && this.#lastAnswered !== runId) this.#byRun.delete(this.#lastAnswered);
    this.#lastAnswered = runId;
  }

  /**
   * On close, after the runs in flight were answered: every waiter still waiting (on a run parked here, or
   * one another process went on with) would wait forever, as nothing here will see that run end. They are
   * rejected as "closed"; the run itself is left as the log has it. `parked`: the run the machine held parked.
   */
  failUnanswered(parked: { runId: string; approvals: readonly string[] } | null): void {
    for (const [runId, entry] of this.#byRun) {
      if (runId === this.#lastAnswered) continue;
      const message =
        parked?.runId === runId
          ? `The runtime closed while run '${runId}' of context '${this.contextId}' was parked awaiting approval (${parked.approvals.join(", ")}). ` +
            "The run stays parked in the log: approve or reject it from a runtime on the same store to go on with it."
          : `The runtime closed before run '${runId}' of context '${this.contextId}' ended here; its end, once recorded, is in the log.`;
      // A waiter that let its promise go must not get an unhandled rejection from a close.
      entry.promise.catch(() => undefined);
      entry.reject(new RuntimeError("closed", message));
      this.#byRun.delete(runId);
    }
  }
}
