// What the live view shows of each context, folded from the events as they are appended.
import type { RecordedEvent } from "../events/schema.ts";
import type { LiveDelta } from "../runtime/liveDeltas.ts";
import type { ContextView } from "../projections/contexts.ts";
import { isFolded } from "../projections/projection.ts";
import { type RunEnd, runEndOf } from "../projections/runStatus.ts";
import { shownStatus, type Shown } from "./status.ts";

/** The live view's line for a run's end. */
const ACTIVITY_AT_END: Record<RunEnd["run"], (end: RunEnd) => string> = {
  completed: () => "answered",
  stopped: (end) => `stopped by ${end.stoppedBy === "superior" ? "its superior" : "the user"}`,
  failed: (end) => `failed (${end.failure?.reason})`,
  interrupted: () => "interrupted",
};

export type LiveNode = {
  id: string;
  agentNumber: number;
  profile: string;
  name: string;
  parentId: string | null;
  status: Shown;
  paused: boolean;
  /** Its model call waits in the runtime's queue (a concurrency cap or a rate limit holds it). */
  queued: boolean;
  /** Tool calls of its run waiting for a person's decision (actorzero approvals). */
  awaiting: number;
  /** The tools those calls are for, in the order asked. */
  awaitingTools: string[];
  /** Its run is parked on its tree's budget: the limit its next call would pass, and the tree's root. */
  budgetParked?: { limit: string; rootId: string } | null;
  step: number;
  activity: string;
  /** Epoch ms of the current (or last) run's start and end. */
  startedAt: number | null;
  endedAt: number | null;
  inputTokens: number;
  outputTokens: number;
  /** Jobs of the current parallel call: started and finished. */
  jobs: { started: number; finished: number };
  /** The text of the model call streaming now (live deltas), keyed by its run, step and attempt. */
  streamed?: { call: string; text: string };
};

export class LiveState {
  readonly nodes = new Map<string, LiveNode>();
  /** Creation order. */
  readonly order: string[] = [];
  position = 0;

  /** Contexts that existed before the command started (a `send` to an old context), as the projections know them. */
  seed(views: readonly ContextView[]): void {
    for (const v of views) {
      if (this.nodes.has(v.id)) continue;
      this.add({
        id: v.id,
        agentNumber: v.agentNumber,
        profile: v.profile,
        name: v.name,
        parentId: v.parentContextId,
        status: shownStatus(v),
        paused: v.paused,
        queued: v.status === "running" && v.queued,
        awaiting: v.status === "running" ? v.awaitingApproval.length - (v.parkedOnBudget ? 1 : 0) : 0,
        awaitingTools: [],
        budgetParked:
          v.status === "running" && v.parkedOnBudget
            ? { limit: v.parkedOnBudget.limit, rootId: v.rootContextId }
            : null,
        step: 0,
        activity: "",
        startedAt: v.lastRun?.startedAt ? Date.parse(v.lastRun.startedAt) : null,
        endedAt: v.lastRun?.endedAt ? Date.parse(v.lastRun.endedAt) : null,
        inputTokens: 0,
        outputTokens: 0,
        jobs: { started: 0, finished: 0 },
      });
    }
  }

  private add(node: LiveNode) {
    this.nodes.set(node.id, node);
    this.order.push(node.id);
  }

  label(id: string): string {
    const n = this.nodes.get(id);
    return n ? `A${n.agentNumber} ${n.profile}` : `? ${id.slice(0, 8)}`;
  }

  /** A live delta: the running agent's text as it streams, shown (its newest end) as what it does now. */
  applyDelta(d: LiveDelta): void {
    const n = this.nodes.get(d.contextId);
    if (!n || d.delta.kind !== "text") return;
    const call = `${d.runId}:${d.step}:${d.attempt}`;
    const text = (n.streamed?.call === call ? n.streamed.text : "") + d.delta.text;
    n.streamed = { call, text };
    const flat = text.replace(/\s+/g, " ").trimStart();
    n.activity = `“${flat.length > 36 ? `…${flat.slice(-35)}` : flat}`;
  }

  apply(e: RecordedEvent): void {
    this.position = Math.max(this.position, e.globalPosition);
    // A control stream is no context's: what the driver does about a request (RunStopped, ContextPaused, …) shows.
    if (!isFolded(e)) return;
    if (e.type === "ContextCreated") {
      if (this.nodes.has(e.streamId)) return;
      const d = e.data;
      this.add({
        id: e.streamId,
        agentNumber: d.agentNumber,
        profile: d.profile,
        name: d.name,
        parentId: d.parentContextId,
        status: "idle",
        paused: false,
        queued: false,
        awaiting: 0,
        awaitingTools: [],
        step: 0,
        activity: "created",
        startedAt: null,
        endedAt: null,
        inputTokens: 0,
        outputTokens: 0,
        jobs: { started: 0, finished: 0 },
      });
      return;
    }
    const n = this.nodes.get(e.streamId);
    if (!n) return;
    const at = Date.parse(e.recordedAt);
    const child = (id: string) => {
      const c = this.nodes.get(id);
      return c ? `A${c.agentNumber} ${c.name}` : id.slice(0, 8);
    };
    switch (e.type) {
      case "ContextRenamed":
        n.name = e.data.name;
        break;
      case "MessageReceived":
        n.activity = e.data.sender === "user" ? "message from the user" : "task from its superior";
        break;
      case "RunStarted":
        n.status = "running";
        n.step = 0;
        n.startedAt = at;
        n.endedAt = null;
        n.jobs = { started: 0, finished: 0 };
        n.awaiting = 0;
        n.awaitingTools = [];
        n.queued = false;
        n.activity = "starting";
        break;
      case "InterventionReceived":
        n.activity = "message received (delivered at the next step)";
        break;
      case "ModelCalled":
        n.step = e.data.step;
        n.activity = e.data.attempt > 1 ? `calling the model (attempt ${e.data.attempt})` : "calling the model";
        break;
      case "ModelReplied":
        n.inputTokens += e.data.usage?.inputTokens ?? 0;
        n.outputTokens += e.data.usage?.outputTokens ?? 0;
        n.activity =
          e.data.toolCalls.length > 0 ? `chose ${e.data.toolCalls.map((c) => c.name).join(", ")}` : "answered";
        break;
      case "ModelCallFailed":
        n.activity = `model call failed (${e.data.reason})${e.data.retryInMs !== null ? `, retrying in ${e.data.retryInMs}ms` : ""}`;
        break;
      case "ModelWarned":
        n.activity = "warned: reply not usable";
        break;
      case "ToolCalled":
        n.activity = e.data.name === "response" ? "answering" : `running ${e.data.name}`;
        break;
      case "ToolReturned":
        n.activity = `${e.data.name} returned`;
        break;
      case "ToolFailed":
        n.activity = `${e.data.name} failed${e.data.repairable ? " (told the model)" : ""}`;
        break;
      case "SubordinateCalled":
        n.activity =
          n.jobs.started > 0
            ? `parallel: ${n.jobs.finished}/${n.jobs.started} jobs done`
            : `waiting on ${child(e.data.childContextId)}`;
        break;
      case "SubordinateReturned":
        n.activity = `${child(e.data.childContextId)} ${e.data.outcome}`;
        break;
      case "ParallelJobStarted":
        n.jobs.started++;
        n.activity = `parallel: ${n.jobs.finished}/${n.jobs.started} jobs done`;
        break;
      case "ParallelJobFinished":
        n.jobs.finished++;
        n.activity = `parallel: ${n.jobs.finished}/${n.jobs.started} jobs done`;
        break;
      case "RunCompleted":
      case "RunStopped":
      case "RunFailed":
      case "RunInterrupted": {
        const end = runEndOf(e)!;
        n.status = end.run;
        n.endedAt = at;
        n.awaiting = 0;
        n.awaitingTools = [];
        n.budgetParked = null;
        n.queued = false;
        n.activity = ACTIVITY_AT_END[end.run](end);
        break;
      }
      case "ContextPaused":
        n.paused = true;
        break;
      case "ContextResumed":
        n.paused = false;
        break;
      case "ApprovalRequested":
        n.activity = `awaiting approval: ${e.data.tool}`;
        n.awaiting++;
        n.awaitingTools.push(e.data.tool);
        break;
      case "ApprovalGranted":
        n.activity = "approved";
        n.awaiting = Math.max(0, n.awaiting - 1);
        n.awaitingTools.shift();
        break;
      case "ApprovalDenied":
        n.activity = "rejected";
        n.awaiting = Math.max(0, n.awaiting - 1);
        n.awaitingTools.shift();
        break;
      case "BudgetExhausted":
        n.activity = `parked: the tree's ${e.data.limit} budget`;
        n.budgetParked = { limit: e.data.limit, rootId: e.data.rootContextId };
        break;
      case "BudgetRestored":
        n.activity = "budget extended";
        n.budgetParked = null;
        break;
      case "ModelOverrideSet":
      // The tree's budget lives in a stream of its own; a run parked on it shows by BudgetExhausted, in its own.
      case "BudgetSet":
      case "BudgetExtended":
      case "BudgetReserved":
      case "BudgetSettled":
        break;
      case "HistoryCompacted":
        n.activity = "compacting history";
        break;
      case "ModelCallQueued":
        n.activity = "queued for the model";
        n.queued = true;
        break;
      case "ModelCallAdmitted":
        n.activity = "thinking";
        n.queued = false;
        break;
      case "RemoteTaskSent":
        n.activity = `sending to ${e.data.url}`;
        break;
      case "RemoteTaskAccepted":
        n.activity = `remote task ${e.data.taskId.slice(0, 8)}`;
        break;
      default: {
        const _exhaustive: never = e;
      }
    }
  }
}
