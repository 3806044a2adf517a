// The working data of one run this process drives: pause, interventions, the call in flight, its children and jobs.
// Whether the run is in flight is the context machine's to say (contextMachine.ts), not this handle's.
import type { ContextId, RunId } from "../events/ids.ts";
import type { Job } from "../tools/jobs.ts";

export type InFlight =
  | { kind: "model"; step: number; attempt: number }
  | { kind: "tool"; toolCallId: string; name: string };

export class RunHandle {
  /** The call the run is waiting on, so a stop can record what it aborted. */
  inFlight: InFlight | null = null;
  /** The first model call's ModelCalled went with the run's start: the loop does not append it again. */
  firstCallRecorded = false;
  /** Children this run is waiting on, stopped first when this run is stopped. */
  readonly runningChildren = new Set<ContextId>();
  /** The `parallel` jobs this run started, by job id. */
  readonly jobs = new Map<string, Job>();
  /** Delegations past the live-children guard whose child is not running yet. */
  reservedChildren = 0;
  /** Who asked for the stop, recorded in RunStopped. */
  stopRequestedBy: "user" | "superior" | null = null;
  /** Resolves when the loop's program has finished (after a stop, once it has unwound). */
  readonly unwound: Promise<void>;
  markUnwound!: () => void;
  private interventionsReceived = 0;
  private interventionsDelivered = 0;
  private paused = false;
  private wakeups: (() => void)[] = [];

  constructor(
    readonly contextId: ContextId,
    readonly runId: RunId,
    readonly correlationId: string,
  ) {
    this.unwound = new Promise((resolve) => (this.markUnwound = resolve));
  }

  interventionReceived(): void {
    this.interventionsReceived += 1;
    this.setPaused(false);
  }

  /** Called as the model call that carries every intervention so far is recorded. */
  interventionsFlushed(): void {
    this.interventionsDelivered = this.interventionsReceived;
  }

  get hasUndeliveredInterventions(): boolean {
    return this.interventionsReceived > this.interventionsDelivered;
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
    if (!paused) {
      const w = this.wakeups;
      this.wakeups = [];
      for (const wake of w) wake();
    }
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Resolves at once when not paused, else when resumed; rejects when the signal aborts. */
  waitWhilePaused(signal: AbortSignal): Promise<void> {
    if (!this.paused) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason ?? new Error("aborted"));
      signal.addEventListener("abort", onAbort, { once: true });
      this.wakeups.push(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }
}
