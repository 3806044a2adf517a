// The life of one `parallel` job: its call down the one tool-call path, its wait for a decision, its end on the log.
//
// Requirements:
// - A job's call goes through `callTool` like the loop's: parsed, asked of the approval policy, run or
//   resumed, its errors mapped alike. A job whose call needs approval records ApprovalRequested naming the
//   job (its tool call id is the job id) and waits for the decision; the other jobs run meanwhile. Granted,
//   it runs; denied, it ends as an error with who denied it and why.
// - A job ends once, as success, error or cancelled (a cancel or a stop aborts its tool or its wait); its
//   end reaches the log with the run's next append. A stop records the ends of jobs still running itself.
// - After a restart (`resumeJobs`) the run's jobs are rebuilt from the log: an ended job keeps its end;
//   one waiting for a decision waits again (asked once, never twice); one granted before the restart, or
//   that needed no approval, may have run: it goes on as its tool resumes (or re-runs, when idempotent),
//   else it ends with INTERRUPTED_CALL; one with no request recorded asks the policy again (it never ran).
import type { JobId } from "../events/ids.ts";
import type { DataOf } from "../events/schema.ts";
import type { Decision } from "./approval.ts";
import type { Delegator, RunScope } from "./delegator.ts";
import type { Tool, ToolContext } from "./defineTool.ts";
import { jobFinished, type Job } from "./jobs.ts";
import { callTool, type ToolCallResult } from "./toolCall.ts";

/** A job's approval as its log has it: the request, and the decision when one is recorded. */
export type JobApproval = { approvalId: string; decision: Decision | null };

/** A run's jobs as recorded, for rebuilding them after a restart. */
export type RecordedJobs = {
  started: readonly DataOf<"ParallelJobStarted">[];
  finished: readonly DataOf<"ParallelJobFinished">[];
  approvals: ReadonlyMap<string, JobApproval>;
};

type LiveJob = Job & { settle: () => void };

export const newJob = (jobId: JobId, tool: string, startedBy: string): LiveJob => {
  let settle!: () => void;
  const done = new Promise<void>((r) => (settle = r));
  return {
    jobId,
    tool,
    status: "running",
    contextId: null,
    result: null,
    error: null,
    done,
    abort: new AbortController(),
    cancelled: false,
    startedBy,
    settle,
  };
};

/**
 * After a restart, the run's jobs as its log has them: ended ones with their recorded end, the others going
 * on (`ctxOf`: the tool context of the `parallel` call that started them).
 */
export const resumeJobs = (
  handle: RunScope,
  tools: ReadonlyMap<string, Tool<unknown>>,
  recorded: RecordedJobs,
  ctxOf: (toolCallId: string) => ToolContext,
): void => {
  const ends = new Map(recorded.finished.map((f) => [f.jobId as string, f]));
  for (const s of recorded.started) {
    const job = newJob(s.jobId, s.toolName, s.toolCallId);
    handle.jobs.set(job.jobId, job);
    const end = ends.get(s.jobId);
    if (end) {
      Object.assign(job, { status: end.status, result: end.result, error: end.error, contextId: end.contextId });
      job.settle();
      continue;
    }
    void runJob(handle, tools, s.arguments, job, ctxOf(s.toolCallId), {
      cutOff: true,
      approval: recorded.approvals.get(s.jobId) ?? null,
    });
  }
};

/** Where a job starts from: afresh, or cut off by a restart with the approval it had asked for. */
export type JobStart = { cutOff: boolean; approval: JobApproval | null };

/** Runs one job to its end (see the requirements above). */
export const runJob = async (
  handle: RunScope,
  tools: ReadonlyMap<string, Tool<unknown>>,
  rawArguments: unknown,
  job: LiveJob,
  ctx: ToolContext,
  from: JobStart,
): Promise<void> => {
  const signal = job.abort.signal;
  const env = {
    tools,
    resolveReference: (id: string) => handle.storedResult(id),
    approvals: handle.approvals,
    context: (sig: AbortSignal): ToolContext => ({
      ...ctx,
      toolCallId: job.jobId,
      jobId: job.jobId,
      signal: sig,
      reportSubordinate: (id) => {
        job.contextId = id;
      },
    }),
    signal,
  };
  const call = { id: job.jobId, name: job.tool, arguments: rawArguments ?? {} };
  let result: ToolCallResult | { kind: "thrown"; error: string };
  try {
    let cutOff = from.cutOff;
    let decision = from.approval?.decision ?? undefined;
    if (from.approval && !decision) {
      // Asked before the restart and still undecided: the job never ran, and is not asked twice.
      decision = await handle.approvals.decisionOn(from.approval.approvalId, signal);
      cutOff = false;
    }
    result = await callTool(env, call, { decision, cutOff });
    if (result.kind === "needs_approval") {
      const approvalId = await handle.approvals.requestForJob({
        jobId: job.jobId,
        tool: job.tool,
        arguments: call.arguments,
        step: ctx.step ?? 1,
      });
      result = await callTool(env, call, { decision: await handle.approvals.decisionOn(approvalId, signal) });
    }
  } catch (e) {
    // A cancel or a stop aborted the wait; or the log refused the request.
    result = { kind: "thrown", error: e instanceof Error ? e.message : String(e) };
  }
  const ended =
    result.kind === "returned"
      ? { status: "success" as const, result: result.outcome.text, error: null }
      : {
          status: job.cancelled ? ("cancelled" as const) : ("error" as const),
          result: null,
          error: result.kind === "needs_approval" ? "approval was not decided" : result.error,
        };
  // The run may have ended meanwhile (a stop records the job's end itself).
  await handle.exclusive(async () => {
    if (handle.ended || job.status !== "running") return;
    Object.assign(job, ended);
    // The job's end reaches the log with the caller's next append, before its next effect.
    handle.stage([jobFinished(handle.runId, job, ended)], {
      correlationId: handle.correlationId,
      causationId: job.jobId,
    });
  });
  job.settle();
};

/** Cancels a running job: aborts its tool (or its wait for a decision) and stops the subordinate it runs, then waits for it to end. */
export const cancelJob = async (rt: Pick<Delegator, "stop">, job: Job): Promise<void> => {
  if (job.status !== "running") return;
  job.cancelled = true;
  job.abort.abort(new Error("cancelled"));
  if (job.contextId) await rt.stop(job.contextId).catch(() => null);
  await job.done;
};

/** Before a run ends, jobs still running are cancelled so none outlives it. */
export const cancelOpenJobs = async (rt: Pick<Delegator, "stop">, jobs: ReadonlyMap<string, Job>): Promise<void> => {
  await Promise.all([...jobs.values()].map((j) => cancelJob(rt, j)));
};
