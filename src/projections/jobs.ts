// The `jobs` projection: the items of `parallel` tool calls (DESIGN §6), by job id and by the context that started them.
import type { JobStatus } from "../events/schema.ts";
import { defineProjection, onceByPositionFresh, readsEvents } from "./projection.ts";

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

const apply = readsEvents<JobView>(
  {
    ParallelJobStarted: (j, event) => {
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
    },
    ParallelJobFinished: (j, event) => {
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
    },
    SubordinateCalled: (j, event) => ({ ...j, childContextId: event.data.childContextId }),
  },
  // The job's first event names the context it belongs to (the stream its events are in).
  (j, event) => (j.firstPosition === 0 ? { ...j, firstPosition: event.globalPosition, contextId: event.streamId } : j),
);

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
