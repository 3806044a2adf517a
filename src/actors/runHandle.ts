// The working data of one run this process drives: the call in flight, its children and jobs.
// Whether the run is in flight, paused, or has an intervention pending is the context machine's to say
// (contextMachine.ts), not this handle's.
import type { ContextId, RunId } from "../events/ids.ts";
import type { RecordedEvent } from "../events/schema.ts";
import type { Job } from "../tools/jobs.ts";
import type { ReplySettle } from "./budgetGate.ts";

export type InFlight =
  { kind: "model"; step: number; attempt: number } | { kind: "tool"; toolCallId: string; name: string };

export class RunHandle {
  /** The call the run is waiting on, so a stop can record what it aborted. */
  inFlight: InFlight | null = null;
  /** The first model call's ModelCalled went with the run's start: the loop does not append it again. */
  firstCallRecorded = false;
  /** The model call the run parked on its budget after recording it (budgetGate.ts `parkedCallOf`): not appended again. */
  parkedCall: { step: number; attempt: number } | null = null;
  /** Its model call waits for a place in the runtime's queue (callQueue.ts): a stop now means it was never sent. */
  queued = false;
  /** Children this run is waiting on, stopped first when this run is stopped. */
  readonly runningChildren = new Set<ContextId>();
  /** The `parallel` jobs this run started, by job id. */
  readonly jobs = new Map<string, Job>();
  /** Delegations past the live-children guard whose child is not running yet. */
  reservedChildren = 0;
  /** A budgeted call that got its reply: the settle its ModelReplied carries (budgetGate.ts `replySettles`). */
  unsettled: ReplySettle | null = null;
  /** The loop returned because calls wait for approval (the run is not over: the machine parks it). */
  parked = false;
  /** Who asked for the stop, recorded in RunStopped. */
  stopRequestedBy: "user" | "superior" | null = null;
  /** Resolves when the loop's program has finished (after a stop, once it has unwound). */
  readonly unwound: Promise<void>;
  markUnwound!: () => void;

  constructor(
    readonly contextId: ContextId,
    readonly runId: RunId,
    readonly correlationId: string,
  ) {
    this.unwound = new Promise((resolve) => (this.markUnwound = resolve));
  }

  /**
   * A handle for run `runId` made from the log (a parked run going on, or stopped, here): its correlation
   * from its start; the children and jobs of `previous` when it is the same run parked in this process.
   * With `parked`, the run is parked: nothing of it is in flight (a stop need not wait for a loop), and
   * the decision goes on with it as a parked run.
   */
  static fromLog(
    contextId: ContextId,
    runId: RunId,
    facts: readonly RecordedEvent[],
    previous: RunHandle | null,
    opts: { parked?: boolean } = {},
  ): RunHandle {
    const started = facts.find((f) => f.type === "RunStarted" && f.data.runId === runId);
    const handle = new RunHandle(contextId, runId, started?.metadata.correlationId ?? runId);
    if (previous?.runId === runId) {
      for (const c of previous.runningChildren) handle.runningChildren.add(c);
      for (const [id, job] of previous.jobs) handle.jobs.set(id, job);
    }
    if (opts.parked) {
      handle.parked = true;
      handle.markUnwound();
    }
    return handle;
  }
}
