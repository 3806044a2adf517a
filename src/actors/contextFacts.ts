// The context machine's context: what it holds of the log, and the pure fold of facts onto it (contextMachine.ts).
//
// Requirements:
// - The context changes only from appended facts, folded with the one status fold (projections/runStatus.ts)
//   and the one approvals rule (projections/contexts.ts `awaitingApprovalAfter`); a fact at or below the
//   known version is skipped, so a fact applied twice changes nothing.
import type { RecordedEvent, RunFailureReason } from "../events/schema.ts";
import type { ContextId, RunId } from "../events/ids.ts";
import { type ContextStatus, runEndOf, statusAfter } from "../projections/runStatus.ts";
import { awaitingApprovalAfter } from "../projections/contexts.ts";

export type ContextMachineContext = {
  contextId: ContextId;
  /** The stream version of the last fact applied. */
  version: number;
  /** The context's status as the log says it (the status fold of every fact applied). */
  status: ContextStatus;
  paused: boolean;
  /** An intervention of the open run was recorded after its last ModelCalled: the model has not seen it. */
  interventionPending: boolean;
  /** The run the log shows open, or null. */
  runId: RunId | null;
  /** The approvals the open run waits for (the same fold as the contexts view's). */
  awaitingApproval: string[];
  /** The approvals the open run's `parallel` jobs wait for: decidable, but the run is not parked by them. */
  jobApprovals: string[];
  failure: { reason: RunFailureReason; message: string } | null;
  /** A run of this process that ended without its end on the log (the store refused it), and why. */
  unrecorded: { runId: RunId; message: string } | null;
};

export type ContextMachineInput = {
  contextId: ContextId;
  version: number;
  /** What the log shows; `running` with no run here restores as `failed` (the run was cut short), unless it awaits approval. */
  status: ContextStatus;
  paused: boolean;
  /** The open run and the approvals it waits for (a parked run restores as parked). */
  runId: RunId | null;
  awaitingApproval: string[];
  awaitingJobApproval: string[];
  failure: ContextMachineContext["failure"];
};

/** Pure: the machine context after the given facts (facts at or below the known version are skipped). */
export const applyFacts = (ctx: ContextMachineContext, facts: readonly RecordedEvent[]): ContextMachineContext => {
  let next = ctx;
  for (const fact of facts) {
    if (fact.streamVersion <= next.version) continue;
    next = { ...next, version: fact.streamVersion, status: statusAfter(next.status, fact) };
    const end = runEndOf(fact);
    if (end) {
      next = {
        ...next,
        runId: null,
        failure: end.failure,
        paused: end.run === "stopped" ? false : next.paused,
        interventionPending: false,
        awaitingApproval: [],
        jobApprovals: [],
      };
      continue;
    }
    switch (fact.type) {
      case "RunStarted":
        next = {
          ...next,
          runId: fact.data.runId,
          failure: null,
          paused: false,
          unrecorded: null,
          interventionPending: false,
          awaitingApproval: [],
          jobApprovals: [],
        };
        break;
      case "ApprovalRequested":
      case "ApprovalGranted":
      case "ApprovalDenied":
      case "BudgetExhausted":
      case "BudgetRestored":
        next = {
          ...next,
          awaitingApproval: awaitingApprovalAfter(next.awaitingApproval, next.runId, fact),
          jobApprovals: awaitingApprovalAfter(next.jobApprovals, next.runId, fact, true),
        };
        break;
      case "InterventionReceived":
        next = { ...next, paused: false, interventionPending: true };
        break;
      case "ModelCalled":
        next = { ...next, interventionPending: false };
        break;
      case "MessageReceived":
      case "ContextResumed":
        next = { ...next, paused: false };
        break;
      case "ContextPaused":
        next = { ...next, paused: true };
        break;
      default:
        break;
    }
  }
  return next;
};

/**
 * Whether `facts` change anything the machine's context holds besides its version. While running,
 * `facts.apply` only assigns (applyFacts), so the runtime need not send facts that change nothing else:
 * the version catches up with the next fact sent, and a fact sent again later is applied to the same
 * context it was judged against (any fact that changed it since is newer, so the older ones are skipped).
 */
export const factsChangeContext = (ctx: ContextMachineContext, facts: readonly RecordedEvent[]): boolean => {
  const next = applyFacts(ctx, facts);
  for (const key of Object.keys(next) as (keyof ContextMachineContext)[])
    if (key !== "version" && next[key] !== ctx[key]) return true;
  return false;
};
