// One `parallel` job in memory while its run lasts (its start and end are also events), and the job-end texts.
import type { ContextId, JobId, RunId } from "../events/ids.ts";
import type { EventOf, JobStatus } from "../events/schema.ts";

export type Job = {
  jobId: JobId;
  tool: string;
  status: JobStatus;
  contextId: string | null;
  result: string | null;
  error: string | null;
  done: Promise<void>;
  abort: AbortController;
  cancelled: boolean;
  /** The `parallel` call that started it. */
  startedBy?: string;
};

/** Why a job ended without its own result, in the words every ParallelJobFinished of that kind carries. */
export const JOB_END = {
  cancelled: "The run was stopped.",
  interrupted: "The runtime stopped while this job ran.",
} as const;

/** How a job ended: its own result, or an end it did not reach itself (a stop, a restart) in JOB_END's words. */
export type JobEnd =
  | { status: "success" | "error" | "cancelled" | "timeout"; result: string | null; error: string | null }
  | { status: keyof typeof JOB_END };

/** The one place a ParallelJobFinished is built. */
export const jobFinished = (
  runId: RunId,
  job: { jobId: string; contextId: string | null },
  end: JobEnd,
): EventOf<"ParallelJobFinished"> => ({
  type: "ParallelJobFinished",
  data: {
    runId,
    jobId: job.jobId as JobId,
    status: end.status,
    result: "result" in end ? end.result : null,
    error: "result" in end ? end.error : JOB_END[end.status],
    contextId: (job.contextId as ContextId | null) ?? null,
  },
});
