// The runs of one context's stream, as the audit shows them: a pure fold of that stream alone.
//
// Requirements:
// - Each entry names the global position of the event it comes from; durations come from `recorded_at`.
// - Every event type is handled or deliberately ignored (the switch is exhaustive).
// - A model call made again because a restart cut off the last attempt of its step (recorded as made, with
//   neither reply nor failure) is marked `madeAgain`: both calls may be billed.
import type { RecordedEvent } from "../events/schema.ts";
import type { Entry, JobAudit, RunAudit, SubordinateLink } from "./auditReport.ts";
import { isFolded } from "./projection.ts";
import { runEndOf } from "./runStatus.ts";
import { addUsage } from "./usage.ts";

const ms = (from: string, to: string | null): number | null =>
  to === null ? null : Math.max(0, Date.parse(to) - Date.parse(from));

/** A call's entry once its answer is recorded at `at`: its outcome, and how long it took from the call. */
const answered = <E extends { at: string; outcome: string; durationMs: number | null }>(
  entry: E | undefined,
  outcome: E["outcome"],
  at: string,
): E | undefined => {
  if (entry) {
    entry.outcome = outcome;
    entry.durationMs = ms(entry.at, at);
  }
  return entry;
};

/** The runs of one context's stream. */
export const auditRuns = (
  stream: readonly RecordedEvent[],
  agentNumbers: ReadonlyMap<string, number> = new Map(),
): RunAudit[] => {
  const runs: RunAudit[] = [];
  const byId = new Map<string, RunAudit>();
  let pendingMessage: {
    text: string;
    sender: "user" | "superior";
    via?: "mcp" | "a2a";
    position: number;
    at: string;
  } | null = null;
  const modelCalls = new Map<string, Extract<Entry, { kind: "model_call" }>>();
  const toolCalls = new Map<string, Extract<Entry, { kind: "tool_call" }>>();
  const jobs = new Map<string, JobAudit>();
  const link = (l: { contextId: string; fresh: boolean }): SubordinateLink => ({
    contextId: l.contextId,
    agentNumber: agentNumbers.get(l.contextId) ?? null,
    fresh: l.fresh,
    outcome: null,
    result: null,
    reason: null,
  });
  const touch = (run: RunAudit, e: RecordedEvent) => {
    run.positions.last = e.globalPosition;
  };
  for (const e of stream) {
    if (!isFolded(e)) continue;
    const runId = "runId" in e.data ? e.data.runId : null;
    const run = runId ? byId.get(runId) : undefined;
    if (run) touch(run, e);
    switch (e.type) {
      case "MessageReceived": {
        pendingMessage = {
          text: e.data.text,
          sender: e.data.sender,
          ...(e.data.via ? { via: e.data.via } : {}),
          position: e.globalPosition,
          at: e.recordedAt,
        };
        break;
      }
      case "RunStarted": {
        const sup = e.data.superior;
        const r: RunAudit = {
          runId: e.data.runId,
          status: "running",
          model: e.data.model,
          requestedBy: sup
            ? { kind: "superior", contextId: sup.contextId, toolCallId: sup.toolCallId, jobId: sup.jobId }
            : { kind: "user" },
          message: pendingMessage?.text ?? "",
          startedAt: e.recordedAt,
          endedAt: null,
          durationMs: null,
          response: null,
          failure: null,
          stoppedBy: null,
          usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, toolCalls: 0 },
          entries: pendingMessage
            ? [
                {
                  kind: "message",
                  position: pendingMessage.position,
                  at: pendingMessage.at,
                  sender: pendingMessage.sender,
                  ...(pendingMessage.via ? { via: pendingMessage.via } : {}),
                  text: pendingMessage.text,
                },
              ]
            : [],
          positions: { first: pendingMessage?.position ?? e.globalPosition, last: e.globalPosition },
        };
        pendingMessage = null;
        runs.push(r);
        byId.set(r.runId, r);
        break;
      }
      case "InterventionReceived":
        run?.entries.push({ kind: "intervention", position: e.globalPosition, at: e.recordedAt, text: e.data.text });
        break;
      case "ModelCalled": {
        if (!run) break;
        const cutOff = modelCalls.get(`${run.runId}/${e.data.step}`)?.outcome === "pending";
        const entry: Extract<Entry, { kind: "model_call" }> = {
          kind: "model_call",
          position: e.globalPosition,
          at: e.recordedAt,
          step: e.data.step,
          attempt: e.data.attempt,
          madeAgain: cutOff,
          model: e.data.model,
          outcome: "pending",
          durationMs: null,
          text: null,
          toolCalls: [],
          usage: null,
          error: null,
        };
        run.entries.push(entry);
        modelCalls.set(`${run.runId}/${e.data.step}`, entry);
        break;
      }
      case "ModelReplied": {
        if (!run) break;
        const entry = answered(modelCalls.get(`${e.data.runId}/${e.data.step}`), "replied", e.recordedAt);
        if (!entry) break;
        entry.text = e.data.text;
        entry.toolCalls = e.data.toolCalls;
        entry.usage = e.data.usage;
        run.usage = addUsage(run.usage, 1, e.data.usage);
        break;
      }
      case "ModelCallFailed": {
        const entry = answered(modelCalls.get(`${e.data.runId}/${e.data.step}`), "failed", e.recordedAt);
        if (!entry) break;
        entry.error = { reason: e.data.reason, message: e.data.message, retryable: e.data.retryable };
        // A retry is a new ModelCalled of the same step.
        modelCalls.delete(`${e.data.runId}/${e.data.step}`);
        break;
      }
      case "HistoryCompacted": {
        if (!run) break;
        const d = e.data;
        run.entries.push({
          kind: "compaction",
          position: e.globalPosition,
          at: e.recordedAt,
          step: d.step,
          model: d.model,
          trigger: d.trigger,
          topics: d.topics.length,
          elided: d.elided.length,
          tokensBefore: d.tokensBefore,
          tokensAfter: d.tokensAfter,
          summary: d.summary,
          usage: d.usage,
          durationMs: d.durationMs,
        });
        run.usage = addUsage(run.usage, d.calls, d.usage);
        break;
      }
      case "ModelWarned":
        run?.entries.push({
          kind: "warning",
          position: e.globalPosition,
          at: e.recordedAt,
          step: e.data.step,
          text: e.data.text,
        });
        break;
      case "ToolCalled": {
        if (!run) break;
        const entry: Extract<Entry, { kind: "tool_call" }> = {
          kind: "tool_call",
          position: e.globalPosition,
          at: e.recordedAt,
          step: e.data.step,
          toolCallId: e.data.toolCallId,
          name: e.data.name,
          arguments: e.data.arguments,
          outcome: "pending",
          durationMs: null,
          result: null,
          error: null,
          repairable: null,
          subordinate: null,
          jobs: [],
        };
        run.entries.push(entry);
        run.usage.toolCalls++;
        toolCalls.set(e.data.toolCallId, entry);
        break;
      }
      case "ToolReturned": {
        const entry = answered(toolCalls.get(e.data.toolCallId), "returned", e.recordedAt);
        if (entry) entry.result = e.data.result;
        break;
      }
      case "ToolFailed": {
        const entry = answered(toolCalls.get(e.data.toolCallId), "failed", e.recordedAt);
        if (!entry) break;
        entry.error = e.data.error;
        entry.repairable = e.data.repairable;
        break;
      }
      case "ParallelJobStarted": {
        const job: JobAudit = {
          jobId: e.data.jobId,
          toolName: e.data.toolName,
          arguments: e.data.arguments,
          status: "running",
          result: null,
          error: null,
          contextId: null,
          subordinate: null,
        };
        jobs.set(job.jobId, job);
        toolCalls.get(e.data.toolCallId)?.jobs.push(job);
        break;
      }
      case "ParallelJobFinished": {
        const job = jobs.get(e.data.jobId);
        if (!job) break;
        job.status = e.data.status;
        job.result = e.data.result;
        job.error = e.data.error;
        job.contextId = e.data.contextId ?? job.contextId;
        break;
      }
      case "SubordinateCalled": {
        const l = link({ contextId: e.data.childContextId, fresh: e.data.fresh });
        const job = e.data.jobId ? jobs.get(e.data.jobId) : undefined;
        if (job) {
          job.subordinate = l;
          job.contextId = l.contextId;
        } else {
          const entry = toolCalls.get(e.data.toolCallId);
          if (entry) entry.subordinate = l;
        }
        break;
      }
      case "SubordinateReturned": {
        const entry = toolCalls.get(e.data.toolCallId);
        const target = entry?.subordinate ?? jobs.get(e.data.toolCallId)?.subordinate ?? null;
        if (!target) break;
        target.outcome = e.data.outcome;
        target.result = e.data.result;
        target.reason = e.data.reason;
        break;
      }
      case "RunCompleted":
      case "RunStopped":
      case "RunFailed":
      case "RunInterrupted": {
        if (!run) break;
        run.endedAt = e.recordedAt;
        run.durationMs = ms(run.startedAt, e.recordedAt);
        const end = runEndOf(e)!;
        run.status = end.run;
        run.response = end.response;
        run.failure = end.failure;
        run.stoppedBy = end.stoppedBy;
        break;
      }
      case "RemoteTaskSent":
        run?.entries.push({
          kind: "remote_task",
          position: e.globalPosition,
          at: e.recordedAt,
          url: e.data.url,
          skill: e.data.skill,
          messageId: e.data.messageId,
          taskId: null,
          state: null,
        });
        break;
      case "RemoteTaskAccepted": {
        const sent = run?.entries.find(
          (x): x is Extract<Entry, { kind: "remote_task" }> => x.kind === "remote_task" && x.taskId === null,
        );
        if (sent) Object.assign(sent, { taskId: e.data.taskId, state: e.data.state });
        break;
      }
      case "ContextPaused":
      case "ContextResumed": {
        const target = run ?? runs.at(-1);
        target?.entries.push({
          kind: e.type === "ContextPaused" ? "paused" : "resumed",
          position: e.globalPosition,
          at: e.recordedAt,
        });
        break;
      }
      case "ContextCreated":
      case "ContextRenamed":
      case "ModelOverrideSet":
      // An approval changes no entry here: the tool call's own facts (called, returned, failed) do.
      case "ApprovalRequested":
      case "ApprovalGranted":
      case "ApprovalDenied":
      case "BudgetSet":
      case "BudgetExtended":
      case "BudgetReserved":
      case "BudgetSettled":
      case "BudgetExhausted":
      case "BudgetRestored":
      // Waiting for a place in the queue is not a step of the run: the call's own facts are.
      case "ModelCallQueued":
      case "ModelCallAdmitted":
        break;
      default: {
        const _exhaustive: never = e;
        break;
      }
    }
  }
  return runs;
};
