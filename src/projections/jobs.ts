// The `jobs` projection: the items of `parallel` tool calls (DESIGN §6), by job id and by the context that started them.
import type { JobStatus, RecordedEvent } from "../events/schema.ts";
import { defineProjection, onceByPositionFresh, type FoldedEvent } from "./projection.ts";

export type JobView = {
  jobId: string;
  /** The parent context: the stream the job's events are in. */
  contextId: string;
  runId: string | null;
  toolCallId: string | null;
  toolName: string | null;
  arguments: unknown;
  status: JobStatus;
  result: string | null;
  error: string | null;
  /** The child a `call_subordinate` job runs in, known from SubordinateCalled or ParallelJobFinished. */
  childContextId: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** Position of the job's first event: jobs of a context are listed in this order. */
  firstPosition: number;
  position: number;
};

export const initJob = (jobId: string): JobView => ({
  jobId,
  contextId: "",
  runId: null,
  toolCallId: null,
  toolName: null,
  arguments: null,
  status: "pending",
  result: null,
  error: null,
  childContextId: null,
  startedAt: null,
  finishedAt: null,
  firstPosition: 0,
  position: 0,
});

const apply = (state: JobView, event: FoldedEvent): JobView => {
  const j = state.firstPosition === 0 ? { ...state, firstPosition: event.globalPosition, contextId: event.streamId } : state;
  switch (event.type) {
    case "ParallelJobStarted": {
      const d = event.data;
      return {
        ...j,
        runId: d.runId,
        toolCallId: d.toolCallId,
        toolName: d.toolName,
        arguments: d.arguments ?? null,
        // A finish seen first (not in a valid log) keeps its outcome.
        status: j.finishedAt === null ? "running" : j.status,
        startedAt: event.recordedAt,
      };
    }
    case "ParallelJobFinished": {
      const d = event.data;
      return {
        ...j,
        runId: j.runId ?? d.runId,
        status: d.status,
        result: d.result,
        error: d.error,
        childContextId: d.contextId ?? j.childContextId,
        finishedAt: event.recordedAt,
      };
    }
    case "SubordinateCalled":
      return { ...j, childContextId: event.data.childContextId };
    case "ContextCreated":
    case "ContextRenamed":
    case "ModelOverrideSet":
    case "MessageReceived":
    case "InterventionReceived":
    case "RunStarted":
    case "ModelCalled":
    case "ModelReplied":
    case "ModelCallFailed":
    case "ModelWarned":
    case "ToolCalled":
    case "ToolReturned":
    case "ToolFailed":
    case "SubordinateReturned":
    case "RunCompleted":
    case "RunStopped":
    case "RunFailed":
    case "RunInterrupted":
    case "ContextPaused":
    case "ContextResumed":
    case "ApprovalRequested":
    case "ApprovalGranted":
    case "ApprovalDenied":
    case "HistoryCompacted":
    case "BudgetSet":
    case "BudgetExtended":
    case "BudgetReserved":
    case "BudgetSettled":
    case "BudgetExhausted":
    case "BudgetRestored":
    case "ModelCallQueued":
    case "ModelCallAdmitted":
    // A remote run's task: what it was sent and the remote task id are the contexts view's.
    case "RemoteTaskSent":
    case "RemoteTaskAccepted":
      return state;
    default: {
      const _exhaustive: never = event;
      return state;
    }
  }
};

/** Key: the job id. Grouped by the parent context, ordered by the job's first event. */
export const jobsProjection = defineProjection<JobView>({
  name: "jobs",
  version: 1,
  keysOf: (event) => {
    switch (event.type) {
      case "ParallelJobStarted":
      case "ParallelJobFinished":
        return [event.data.jobId];
      case "SubordinateCalled":
        return event.data.jobId === null ? [] : [event.data.jobId];
      default:
        return [];
    }
  },
  init: initJob,
  evolve: onceByPositionFresh(apply),
  columns: (_key, j) => ({ group: j.contextId, order: j.firstPosition }),
});
