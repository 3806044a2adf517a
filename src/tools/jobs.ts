// One `parallel` job in memory while its run lasts (its start and end are also events), and the job-end texts.
import type { JobId } from "../events/ids.ts";
import type { JobStatus } from "../events/schema.ts";

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
};

/** Why a job ended without its own result, in the words every ParallelJobFinished of that kind carries. */
export const JOB_END = {
  cancelled: "The run was stopped.",
  interrupted: "The runtime stopped while this job ran.",
} as const;
