// Resuming a run a gone process left unfinished (recovery "resume"): the run goes on in this process from its
// last recorded step, as the same run (no new RunStarted), under this process's lease.
//
// Requirements:
// - Where the run picks up is read from its own facts (actors/resumePlan.ts); the loop reuses what they hold.
// - The run's working data is what the uninterrupted run held there: its correlation, the interventions
//   not yet delivered, the decisions on its step's approvals, and its `parallel` jobs (rebuilt by runs.ts
//   from the facts kept here); the pause is the machine's, restored from the log.
// - The machine takes the run with `run.start` (contextSession.ts `resumed`; legal from `failed`, where a
//   context the log shows running restores), so its end comes, as for any run, from the invocation's result.
import type { DataOf, RecordedEvent } from "../events/schema.ts";
import type { RunId } from "../events/ids.ts";
import { parkedStepOf } from "../actors/approvalGate.ts";
import { planResume, type ResumePlan } from "../actors/resumePlan.ts";
import type { ContextSession } from "./contextSession.ts";
import type { EventStore } from "../events/store.ts";
import type { JobApproval, RecordedJobs } from "../tools/parallelJobs.ts";

/** What a resumed run starts from: the plan for its loop, and its jobs as recorded. */
export type Resuming = {
  runId: RunId;
  plan: ResumePlan;
  jobs: RecordedJobs & { stepOf: ReadonlyMap<string, number> };
};

const ofRun = (runId: string) => (e: RecordedEvent) => "runId" in e.data && e.data.runId === runId;

/** The `parallel` jobs of run `runId` as its facts have them: started, ended, and the approval each asked for. */
export const recordedJobsOf = (
  facts: readonly RecordedEvent[],
  runId: string,
): RecordedJobs & { stepOf: ReadonlyMap<string, number> } => {
  const started: DataOf<"ParallelJobStarted">[] = [];
  const finished: DataOf<"ParallelJobFinished">[] = [];
  const approvals = new Map<string, JobApproval>();
  const byApproval = new Map<string, JobApproval>();
  const stepOf = new Map<string, number>();
  for (const f of facts.filter(ofRun(runId))) {
    if (f.type === "ToolCalled") stepOf.set(f.data.toolCallId, f.data.step);
    else if (f.type === "ParallelJobStarted") started.push(f.data);
    else if (f.type === "ParallelJobFinished") finished.push(f.data);
    else if (f.type === "ApprovalRequested" && f.data.jobId !== undefined) {
      const a: JobApproval = { approvalId: f.data.approvalId, decision: null };
      approvals.set(f.data.jobId, a);
      byApproval.set(a.approvalId, a);
    } else if (f.type === "ApprovalGranted" || f.type === "ApprovalDenied") {
      const a = byApproval.get(f.data.approvalId);
      if (a)
        a.decision =
          f.type === "ApprovalGranted"
            ? { granted: true, by: f.data.by }
            : { granted: false, by: f.data.by, reason: f.data.reason };
    }
  }
  return { started, finished, approvals, stepOf };
};

/** Starts the context's open run again here; the caller holds its lease and has checked that no run is in flight. */
export const resumeRun = async (store: EventStore, ac: ContextSession): Promise<void> => {
  const runId = ac.view.currentRunId as RunId;
  const facts = (await store.readStream(ac.id)).filter(ofRun(runId));
  const found = planResume(facts);
  // Calls of the step decided by a person before the restart keep their decisions.
  const parked = parkedStepOf(facts, runId);
  const plan = { ...found, decisions: parked?.step === found.step ? parked.decisions : found.decisions };
  ac.resumed({ runId, plan, jobs: recordedJobsOf(facts, runId) }, facts);
};
