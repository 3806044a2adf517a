// `parallel`: up to 8 independent tool calls at once, each a job with its own id, recorded as events (DESIGN §6).
//
// Requirements:
// - At most 8 calls; no nested `parallel`; `response` is refused inside; unknown tools are refused before any job starts.
// - Job ids look like `callsubordin-1a2b3c4d`: the tool name's alphanumerics cut to 12, `-`, 8 hex.
// - Jobs move running → success | error | cancelled (| interrupted after a restart); each start and end is an event.
// - start (waits by default), await, collect (no wait), cancel; a wait that times out leaves its jobs running.
// - A `call_subordinate` job follows the delegation contract exactly, with the job id as the slot of a fresh child;
//   its snapshot shows `job_id` and the child's `context_id` separately.
// - The output is compact JSON `{status, jobs:[…]}`.
// - Each job's call goes the one path of every tool call (toolCall.ts): a job whose tool needs approval
//   waits for its decision while the other jobs run, and the `parallel` call waits for it like any job
//   (parallelJobs.ts). A `start` a restart cut off waits for the jobs it recorded instead of starting them again.
import { z } from "zod";
import { asJobId, type JobId } from "../events/ids.ts";
import { runScopeOf, type Delegator, type RunScope } from "./delegator.ts";
import type { Job } from "./jobs.ts";
import type { JobStatus } from "../events/schema.ts";
import { defineTool, RepairableToolError, type Tool, type ToolContext } from "./defineTool.ts";
import { cancelJob, newJob, runJob } from "./parallelJobs.ts";

export const MAX_PARALLEL_CALLS = 8;

export const ParallelInput = z.object({
  tool_calls: z.array(z.object({ name: z.string(), arguments: z.unknown().optional() })).optional(),
  job_ids: z.array(z.string()).optional(),
  action: z.enum(["start", "await", "collect", "cancel"]).optional(),
  wait: z.boolean().optional(),
  timeout: z.number().positive().optional(),
});
export type ParallelInput = z.infer<typeof ParallelInput>;

export const PARALLEL_MSG = {
  tooMany: (n: number) =>
    `parallel takes at most ${MAX_PARALLEL_CALLS} tool calls; got ${n}. Split them into several parallel calls.`,
  nested: "parallel cannot run `parallel` inside itself: list all the calls in one parallel call.",
  response: "`response` cannot run inside parallel: collect the jobs, then give your final answer yourself.",
  unknownTool: (name: string, available: string) => `Tool '${name}' not found. Available tools: ${available}.`,
  nothingToStart: "parallel with action 'start' needs `tool_calls`.",
  unknownJob: (id: string) => `Job '${id}' was not found in this run.`,
} as const;

export type { Job } from "./jobs.ts";

/** `callsubordin-1a2b3c4d` from `call_subordinate`. */
export const makeJobId = (toolName: string, hex8: string): JobId =>
  asJobId(`${toolName.replace(/[^A-Za-z0-9]/g, "").slice(0, 12) || "job"}-${hex8}`);

type JobSnapshot = {
  job_id: string;
  tool: string;
  status: JobStatus;
  context_id?: string;
  result?: string;
  error?: string;
};
const snapshotOf = (j: Job): JobSnapshot => ({
  job_id: j.jobId,
  tool: j.tool,
  status: j.status,
  ...(j.contextId ? { context_id: j.contextId } : {}),
  ...(j.result !== null ? { result: j.result } : {}),
  ...(j.error !== null ? { error: j.error } : {}),
});

const overallStatus = (
  jobs: readonly Job[],
  waited: boolean,
): "waiting" | "running" | "success" | "cancelled" | "partial" | "error" => {
  if (jobs.some((j) => j.status === "running" || j.status === "pending")) return waited ? "running" : "waiting";
  if (jobs.every((j) => j.status === "success")) return "success";
  if (jobs.every((j) => j.status === "cancelled")) return "cancelled";
  if (jobs.some((j) => j.status === "success")) return "partial";
  return "error";
};

const render = (jobs: readonly Job[], waited: boolean) =>
  JSON.stringify({ status: overallStatus(jobs, waited), jobs: jobs.map(snapshotOf) });

export const parallelTool = (rt: Delegator, tools: () => ReadonlyMap<string, Tool<unknown>>) =>
  defineTool({
    name: "parallel",
    description: "Run up to 8 independent tool calls at once.",
    input: ParallelInput,
    run: (input, ctx) => act(rt, tools, input, ctx, false),
    resume: (input, ctx) => act(rt, tools, input, ctx, true),
    // A start's ToolCalled goes with its ParallelJobStarted: no job runs before that append.
    recordsCall: (input) => actionOf(input) === "start",
  });

const actionOf = (input: ParallelInput) => input.action ?? (input.tool_calls ? "start" : "await");

const act = async (
  rt: Delegator,
  tools: () => ReadonlyMap<string, Tool<unknown>>,
  input: ParallelInput,
  ctx: ToolContext,
  resumed: boolean,
) => {
  const handle = runScopeOf(ctx);
  if (!handle || handle.runId !== ctx.runId) throw new Error("parallel ran outside its caller's run");
  const action = actionOf(input);
  if (action === "start") {
    // The jobs a cut-off start recorded are the run's already (resumeJobs): wait for them, start nothing.
    const recorded = resumed ? [...handle.jobs.values()].filter((j) => j.startedBy === ctx.toolCallId) : [];
    return recorded.length === 0 ? start(rt, handle, tools(), input, ctx) : answer(recorded, input, ctx);
  }
  const jobs = select(handle, input.job_ids);
  if (action === "cancel") {
    await Promise.all(jobs.map((j) => cancelJob(rt, j)));
    return render(jobs, true);
  }
  if (action === "collect") return render(jobs, false);
  return answer(jobs, { ...input, wait: true }, ctx);
};

/** The jobs' snapshot now (`wait: false`), or once they have ended or the wait timed out. */
const answer = async (jobs: Job[], input: ParallelInput, ctx: ToolContext) => {
  if (input.wait === false) return render(jobs, false);
  await waitFor(jobs, input.timeout, ctx.signal);
  return render(jobs, true);
};

const select = (handle: RunScope, ids: readonly string[] | undefined): Job[] => {
  const all = [...handle.jobs.values()] as Job[];
  if (!ids || ids.length === 0) return all;
  return ids.map((id) => {
    const job = handle.jobs.get(id) as Job | undefined;
    if (!job) throw new RepairableToolError(PARALLEL_MSG.unknownJob(id));
    return job;
  });
};

const waitFor = async (
  jobs: readonly Job[],
  timeoutSeconds: number | undefined,
  signal: AbortSignal,
): Promise<void> => {
  const all = Promise.all(jobs.map((j) => j.done));
  const waits: Promise<unknown>[] = [all];
  let timer: NodeJS.Timeout | undefined;
  if (timeoutSeconds !== undefined) waits.push(new Promise((r) => (timer = setTimeout(r, timeoutSeconds * 1000))));
  waits.push(
    new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true })),
  );
  try {
    await Promise.race(waits);
  } finally {
    if (timer) clearTimeout(timer);
  }
};

const start = async (
  rt: Delegator,
  handle: RunScope,
  tools: ReadonlyMap<string, Tool<unknown>>,
  input: ParallelInput,
  ctx: ToolContext,
) => {
  const calls = input.tool_calls ?? [];
  if (calls.length === 0) throw new RepairableToolError(PARALLEL_MSG.nothingToStart);
  if (calls.length > MAX_PARALLEL_CALLS) throw new RepairableToolError(PARALLEL_MSG.tooMany(calls.length));
  for (const c of calls) {
    if (c.name === "parallel") throw new RepairableToolError(PARALLEL_MSG.nested);
    if (c.name === "response") throw new RepairableToolError(PARALLEL_MSG.response);
    if (!tools.has(c.name)) {
      const available = [...tools.keys()]
        .filter((n) => n !== "parallel" && n !== "response")
        .sort()
        .join(", ");
      throw new RepairableToolError(PARALLEL_MSG.unknownTool(c.name, available));
    }
  }
  const jobs = calls.map((c) =>
    newJob(makeJobId(c.name, rt.clock.uuid().replace(/-/g, "").slice(0, 8)), c.name, ctx.toolCallId),
  );
  await handle.append(
    jobs.map((j, i) => ({
      type: "ParallelJobStarted" as const,
      data: {
        runId: ctx.runId,
        toolCallId: ctx.toolCallId,
        jobId: j.jobId,
        toolName: j.tool,
        arguments: calls[i]!.arguments ?? {},
      },
    })),
    { correlationId: handle.correlationId, causationId: ctx.toolCallId },
  );
  for (const [i, job] of jobs.entries()) {
    handle.jobs.set(job.jobId, job);
    void runJob(handle, tools, calls[i]!.arguments, job, ctx, { cutOff: false, approval: null });
  }
  return answer(jobs, input, ctx);
};

export { cancelJob, cancelOpenJobs, resumeJobs, type RecordedJobs } from "./parallelJobs.ts";
