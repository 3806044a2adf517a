// The `contexts` projection: one view per context (identity, names, lifecycle status, last run), DESIGN §4.
import type { ContextKind, ModelOverride, RecordedEvent, RunFailureReason, Superior } from "../events/schema.ts";
import { defineProjection, onceByPositionFresh, type FoldedEvent } from "./projection.ts";
import { type ContextStatus, runEndOf, type RunStatus } from "./runStatus.ts";

export { INTERRUPTED_MESSAGE, type ContextStatus, type RunStatus } from "./runStatus.ts";

export type LastRun = {
  runId: string;
  status: RunStatus;
  /** Null when the run's start was never seen (a terminal event without RunStarted). */
  startedAt: string | null;
  endedAt: string | null;
  response: string | null;
  superior: Superior | null;
};

export type ContextView = {
  id: string;
  name: string;
  label: string;
  profile: string;
  project: string | null;
  modelOverride: ModelOverride | null;
  agentNumber: number;
  depth: number;
  kind: ContextKind;
  parentContextId: string | null;
  parentAgentNumber: number | null;
  rootContextId: string;
  slot: string | null;
  status: ContextStatus;
  paused: boolean;
  /** Why the last run failed; null unless `status` is `failed`. */
  failure: { reason: RunFailureReason; message: string } | null;
  createdAt: string;
  /** Position of the ContextCreated event (0 until seen): contexts are listed in this order. */
  createdPosition: number;
  updatedAt: string;
  lastRun: LastRun | null;
  /** The run in progress; null unless `status` is `running`. */
  currentRunId: string | null;
  /** The approvals the run in progress waits for (ids, in request order): non-empty while it is parked awaiting approval. */
  awaitingApproval: string[];
  /** The approvals `parallel` jobs of the run in progress wait for: those jobs wait, the run goes on (it is not parked). */
  awaitingJobApproval: string[];
  /** The run in progress is parked on its tree's budget: the limit its next model call would pass (null otherwise). */
  parkedOnBudget: { exhaustionId: string; limit: string } | null;
  /**
   * The run in progress has a model call waiting in the runtime's queue (a concurrency cap or a provider's rate
   * limit holds it): from its ModelCallQueued until its ModelCallAdmitted, or the run's end.
   */
  queued: boolean;
  /** A remote subordinate (kind `remote`): the agent its last run's task went to, and that task's id once the agent took it. */
  remote: { url: string; skill: string | null; taskId: string | null; remoteContextId: string | null } | null;
  /** The last stream version applied. */
  version: number;
  /** The last global position applied. */
  position: number;
};

export const initContext = (id: string): ContextView => ({
  id,
  name: "",
  label: "",
  profile: "",
  project: null,
  modelOverride: null,
  agentNumber: 0,
  depth: 0,
  kind: "root",
  parentContextId: null,
  parentAgentNumber: null,
  rootContextId: id,
  slot: null,
  status: "idle",
  paused: false,
  failure: null,
  createdAt: "",
  createdPosition: 0,
  updatedAt: "",
  lastRun: null,
  currentRunId: null,
  awaitingApproval: [],
  awaitingJobApproval: [],
  parkedOnBudget: null,
  queued: false,
  remote: null,
  version: 0,
  position: 0,
});

const endRun = (
  s: ContextView,
  runId: string,
  status: Exclude<RunStatus, "running">,
  at: string,
  response: string | null,
): LastRun =>
  s.lastRun !== null && s.lastRun.runId === runId
    ? { ...s.lastRun, status, endedAt: at, response }
    : { runId, status, startedAt: null, endedAt: at, response, superior: null };

/**
 * The approvals the open run `runId` waits for, after `fact` (the one rule, also folded by the context machine):
 * a request of that run adds its id, a decision removes it; a run's start or end clears the list (callers do that).
 * The run's own calls park it (`jobs` false); a `parallel` job's request holds only that job (`jobs` true).
 */
export const awaitingApprovalAfter = (
  awaiting: readonly string[],
  runId: string | null,
  fact: RecordedEvent,
  jobs = false,
): string[] => {
  switch (fact.type) {
    case "ApprovalRequested":
      return fact.data.runId === runId &&
        (fact.data.jobId !== undefined) === jobs &&
        !awaiting.includes(fact.data.approvalId)
        ? [...awaiting, fact.data.approvalId]
        : [...awaiting];
    case "ApprovalGranted":
    case "ApprovalDenied":
      return awaiting.filter((a) => a !== fact.data.approvalId);
    // A run parked on its tree's budget waits like one awaiting approval, for the extension that restores it.
    case "BudgetExhausted":
      return fact.data.runId === runId && !awaiting.includes(fact.data.exhaustionId)
        ? [...awaiting, fact.data.exhaustionId]
        : [...awaiting];
    case "BudgetRestored":
      return awaiting.filter((a) => a !== fact.data.exhaustionId);
    default:
      return [...awaiting];
  }
};

/** Which budget limit the run in progress is parked on, after `fact` (an extension that restores it clears it). */
const parkedOnBudgetAfter = (s: ContextView, fact: RecordedEvent): ContextView["parkedOnBudget"] => {
  if (fact.type === "BudgetExhausted" && fact.data.runId === s.currentRunId)
    return { exhaustionId: fact.data.exhaustionId, limit: fact.data.limit };
  if (fact.type === "BudgetRestored" && s.parkedOnBudget?.exhaustionId === fact.data.exhaustionId) return null;
  return s.parkedOnBudget;
};

type Created = Extract<RecordedEvent, { type: "ContextCreated" }>["data"];

const identityOf = (d: Created) => ({
  name: d.name,
  label: d.label,
  profile: d.profile,
  project: d.project,
  modelOverride: d.modelOverride,
  agentNumber: d.agentNumber,
  depth: d.depth,
  kind: d.kind,
  parentContextId: d.parentContextId,
  parentAgentNumber: d.parentAgentNumber,
  rootContextId: d.rootContextId,
  slot: d.slot,
});

/**
 * The view of a context whose ContextCreated is not on the log yet (a fresh subordinate, recorded with its
 * first run): what the fold of that event will say, at version and position 0, so the fold still applies it.
 */
export const unrecordedView = (d: Created, at: string): ContextView => ({
  ...initContext(d.contextId),
  ...identityOf(d),
  createdAt: at,
  updatedAt: at,
});

const apply = (state: ContextView, event: FoldedEvent): ContextView => {
  const s: ContextView = {
    ...state,
    version: event.streamVersion,
    updatedAt: event.recordedAt,
    createdAt: state.createdAt === "" ? event.recordedAt : state.createdAt,
  };
  const at = event.recordedAt;
  switch (event.type) {
    case "ContextCreated":
      return { ...s, ...identityOf(event.data), createdAt: at, createdPosition: event.globalPosition };
    case "ContextRenamed":
      return { ...s, name: event.data.name, label: event.data.label };
    case "ModelOverrideSet":
      return { ...s, modelOverride: event.data.modelOverride };
    case "MessageReceived":
    case "InterventionReceived":
    case "ContextResumed":
      return { ...s, paused: false };
    case "ContextPaused":
      return { ...s, paused: true };
    case "RunStarted":
      return {
        ...s,
        status: "running",
        failure: null,
        currentRunId: event.data.runId,
        awaitingApproval: [],
        awaitingJobApproval: [],
        parkedOnBudget: null,
        queued: false,
        lastRun: {
          runId: event.data.runId,
          status: "running",
          startedAt: at,
          endedAt: null,
          response: null,
          superior: event.data.superior,
        },
      };
    case "RunCompleted":
    case "RunStopped":
    case "RunFailed":
    case "RunInterrupted": {
      const end = runEndOf(event)!;
      return {
        ...s,
        status: end.status,
        // A stop ends a pause too: the next run starts unpaused.
        paused: end.run === "stopped" ? false : s.paused,
        failure: end.failure,
        currentRunId: null,
        awaitingApproval: [],
        awaitingJobApproval: [],
        parkedOnBudget: null,
        queued: false,
        lastRun: endRun(s, end.runId, end.run, at, end.response),
      };
    }
    case "ModelCalled":
    case "ModelReplied":
    case "ModelCallFailed":
    case "ModelWarned":
    case "ToolCalled":
    case "ToolReturned":
    case "ToolFailed":
    case "SubordinateCalled":
    case "SubordinateReturned":
    case "ParallelJobStarted":
    case "ParallelJobFinished":
    case "HistoryCompacted":
    case "BudgetSet":
    case "BudgetExtended":
    case "BudgetReserved":
    case "BudgetSettled":
      return s;
    case "ModelCallQueued":
      return { ...s, queued: event.data.runId === s.currentRunId };
    case "ModelCallAdmitted":
      return { ...s, queued: false };
    case "RemoteTaskSent":
      return {
        ...s,
        remote: {
          url: event.data.url,
          skill: event.data.skill,
          taskId: null,
          remoteContextId: event.data.remoteContextId,
        },
      };
    case "RemoteTaskAccepted":
      return s.remote
        ? {
            ...s,
            remote: {
              ...s.remote,
              taskId: event.data.taskId,
              remoteContextId: event.data.remoteContextId || s.remote.remoteContextId,
            },
          }
        : s;
    case "ApprovalRequested":
    case "ApprovalGranted":
    case "ApprovalDenied":
    case "BudgetExhausted":
    case "BudgetRestored":
      return {
        ...s,
        awaitingApproval: awaitingApprovalAfter(s.awaitingApproval, s.currentRunId, event),
        awaitingJobApproval: awaitingApprovalAfter(s.awaitingJobApproval, s.currentRunId, event, true),
        parkedOnBudget: parkedOnBudgetAfter(s, event),
      };
    default: {
      const _exhaustive: never = event;
      return s;
    }
  }
};

/** Facts kept in a tree's budget stream: they make no view (control streams never reach a fold: projection.ts). */
const OWN_STREAM_TYPES: ReadonlySet<string> = new Set([
  "BudgetSet",
  "BudgetExtended",
  "BudgetReserved",
  "BudgetSettled",
]);

/** Key: the context id (its stream id). Every event of the stream updates `version` and `updatedAt`. */
export const contextsProjection = defineProjection<ContextView>({
  name: "contexts",
  // 2: `awaitingApproval`. 3: `awaitingJobApproval`. 4: `parkedOnBudget`. 5: `queued`. 6: `remote`.
  version: 6,
  // A tree's budget is in a stream of its own, not a context: it makes no view.
  keysOf: (event) => (OWN_STREAM_TYPES.has(event.type) ? [] : [event.streamId]),
  init: initContext,
  evolve: onceByPositionFresh(apply),
  // Grouped by root so `list({ rootContextId })` is an index scan; ordered by creation.
  columns: (_key, s) => ({ group: s.rootContextId, order: s.createdPosition }),
});
