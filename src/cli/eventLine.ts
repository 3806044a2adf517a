// One plain line per event: position, time, context, type, and the gist of its data.
import { extendHint } from "./budgetText.ts";
import type { Paint } from "./ansi.ts";
import type { RecordedEvent } from "../events/schema.ts";
import { clock, compactJson, oneLine } from "./format.ts";

/** The gist of an event's data in a few words; texts are cut to `max` characters. */
export const gist = (e: RecordedEvent, max = 100): string => {
  const t = (s: string | null) => (s === null ? "–" : JSON.stringify(oneLine(s, max)));
  switch (e.type) {
    case "ContextCreated":
      return `A${e.data.agentNumber} ${e.data.profile} ${t(e.data.name)}${e.data.parentContextId ? ` under ${e.data.parentContextId.slice(0, 8)}` : " (root)"}`;
    case "ContextRenamed":
      return t(e.data.name);
    case "ModelOverrideSet":
      return compactJson(e.data.modelOverride);
    case "MessageReceived":
      return `from ${e.data.sender}${e.data.via ? ` over ${e.data.via.toUpperCase()}` : ""}: ${t(e.data.text)}`;
    case "InterventionReceived":
      return t(e.data.text);
    case "RunStarted":
      return `model ${e.data.model}${e.data.superior ? ` for ${e.data.superior.contextId.slice(0, 8)}` : ""}`;
    case "ModelCalled":
      return `step ${e.data.step}${e.data.attempt > 1 ? ` attempt ${e.data.attempt}` : ""}`;
    case "ModelReplied": {
      const calls = e.data.toolCalls.map((c) => c.name).join(", ");
      const usage = e.data.usage ? ` (${e.data.usage.inputTokens} in / ${e.data.usage.outputTokens} out)` : "";
      return `step ${e.data.step}: ${calls ? `calls ${calls}` : t(e.data.text)}${usage}`;
    }
    case "ModelCallFailed":
      return `step ${e.data.step}: ${e.data.reason}${e.data.retryable ? " (retryable)" : ""}: ${oneLine(e.data.message, max)}`;
    case "ModelWarned":
      return t(e.data.text);
    case "ToolCalled":
      return `${e.data.name} ${oneLine(compactJson(e.data.arguments), max)}`;
    case "ToolReturned":
      return `${e.data.name} → ${t(e.data.result)}`;
    case "ToolFailed":
      return `${e.data.name}${e.data.repairable ? " (repairable)" : ""}: ${t(e.data.error)}`;
    case "SubordinateCalled":
      return `${e.data.fresh ? "new" : "continued"} ${e.data.childContextId.slice(0, 8)}${e.data.jobId ? ` as job ${e.data.jobId}` : ""}`;
    case "SubordinateReturned":
      return `${e.data.childContextId.slice(0, 8)} ${e.data.outcome}${e.data.reason ? `: ${oneLine(e.data.reason, max)}` : ""}`;
    case "RunCompleted":
      return t(e.data.response);
    case "RunStopped":
      return `by ${e.data.by}`;
    case "RunFailed":
      return `${e.data.reason}: ${oneLine(e.data.message, max)}`;
    case "RunInterrupted":
      return "";
    case "ContextPaused":
    case "ContextResumed":
      return "";
    case "ParallelJobStarted":
      return `${e.data.jobId} ${e.data.toolName}`;
    case "ParallelJobFinished":
      return `${e.data.jobId} ${e.data.status}${e.data.contextId ? ` (${e.data.contextId.slice(0, 8)})` : ""}`;
    case "ApprovalRequested":
      return `${e.data.approvalId} ${e.data.tool} ${oneLine(compactJson(e.data.arguments), max)}`;
    case "ApprovalGranted":
      return `${e.data.approvalId} by ${e.data.by}${e.data.note ? `: ${oneLine(e.data.note, max)}` : ""}`;
    case "ApprovalDenied":
      return `${e.data.approvalId} by ${e.data.by}: ${oneLine(e.data.reason, max)}`;
    case "HistoryCompacted":
      return `step ${e.data.step}: ${e.data.topics.length} topic(s) summarised, ${e.data.elided.length} tool result(s) elided, ${e.data.tokensBefore} → ${e.data.tokensAfter} tokens`;
    case "RunControlRequested":
      return `${e.data.action} of run ${e.data.runId.slice(0, 8)} in ${e.data.contextId.slice(0, 8)}, asked of the process that drives it`;
    case "BudgetSet":
      return `limits ${JSON.stringify(e.data.limits)} for tree ${e.data.rootContextId.slice(0, 8)}`;
    case "BudgetExtended":
      return `+${JSON.stringify(e.data.more)} for tree ${e.data.rootContextId.slice(0, 8)}`;
    case "BudgetReserved":
      return `${e.data.amount.inputTokens}+${e.data.amount.outputTokens} tokens for step ${e.data.step} of ${e.data.contextId.slice(0, 8)}`;
    case "BudgetSettled":
      return `${e.data.spent.inputTokens}+${e.data.spent.outputTokens} tokens spent`;
    case "BudgetExhausted":
      return `${e.data.limit} would pass its limit at step ${e.data.step}; parked until the budget is extended (${extendHint(e.data.rootContextId, e.data.limit)})`;
    case "BudgetRestored":
      return `budget extended; run ${e.data.runId.slice(0, 8)} goes on`;
    case "ModelCallQueued":
      return `step ${e.data.step} waits its turn${e.data.preset === null ? "" : ` for ${e.data.preset}`} (${e.data.ahead} ahead)`;
    case "ModelCallAdmitted":
      return `step ${e.data.step} sent after ${e.data.waitedMs} ms in the queue`;
    case "RemoteTaskSent":
      return `to ${e.data.url}${e.data.skill ? ` (skill ${e.data.skill})` : ""} as message ${e.data.messageId.slice(0, 8)}`;
    case "RemoteTaskAccepted":
      return `task ${e.data.taskId} (${e.data.state})`;
    default: {
      const _exhaustive: never = e;
      return "";
    }
  }
};

/** `   12  10:42:01.123  A1 researcher  1a2b3c4d  ToolCalled  call_subordinate {...}`. */
export const eventLine = (e: RecordedEvent, who: string, paint: Paint, max = 100): string =>
  [
    String(e.globalPosition).padStart(5),
    paint.dim(clock(e.recordedAt)),
    who.padEnd(14),
    paint.dim(e.streamId.slice(0, 8)),
    paint.bold(e.type.padEnd(19)),
    gist(e, max),
  ]
    .join("  ")
    .trimEnd();

/** The JSON of one event for `--json` output (one object per line). */
export const eventJson = (e: RecordedEvent): string =>
  JSON.stringify({
    position: e.globalPosition,
    eventId: e.eventId,
    streamId: e.streamId,
    streamVersion: e.streamVersion,
    type: e.type,
    schemaVersion: e.schemaVersion,
    recordedAt: e.recordedAt,
    data: e.data,
    metadata: e.metadata,
  });
