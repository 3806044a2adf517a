// The actors the context machine invokes: `run` (the message loop of the current run) and `stopRun` (the recorded stop).
//
// Requirements:
// - The run gets the context's model, system prompt, tools and transcript, and its tools get the run's scope;
//   a remote subordinate's run follows its A2A task instead (remoteRun.ts).
// - A run resuming after a restart (resume.ts) gets its plan, and its `parallel` jobs rebuilt from the log.
// - A run that throws (a bug, a broken store) still ends in the log exactly once, as RunFailed; when
//   that append is refused, the end goes again alone (the staged events that went with the refused
//   one are gone). When the store refuses that too, the actor rejects: the machine ends the run
//   (`onError`) and keeps why, for close() or the next message to record as RunInterrupted.
// - A stop first cancels the run's jobs and stops its running children, waits for the loop to unwind,
//   then records what it aborted (the model call or tool in flight, the jobs) and RunStopped.
// - A run that parked (calls awaiting approval) goes on, once decided, as a new invocation with a new
//   handle, from the log alone (`parkedStepOf`): in this process or in whichever process decided.
// - Calls need approval as the tool says, or as the runtime's, the profile's and the project's lists say;
//   a request times out after `approvals.timeoutMs` when that is set.
// - Nothing here says whether a run is in flight: the machine does. What these check is whether the
//   log still shows the run open (the status fold of its facts), so an end is never written twice.
import * as Effect from "effect/Effect"; // a subpath: the package root loads all of effect
import { ConcurrencyError } from "../events/errors.ts";
import type { DomainEvent } from "../events/schema.ts";
import type { RunActorInput, RunOutput } from "../actors/contextMachine.ts";
import { whileNotPaused } from "../actors/contextQueries.ts";
import { messageLoop } from "../actors/messageLoop.ts";
import type { RunHandle } from "../actors/runHandle.ts";
import { parkedStepOf, type ParkedStep } from "../actors/approvalGate.ts";
import { parkedCallOf } from "../actors/budgetGate.ts";
import { budgetPortFor } from "./budgets.ts";
import { systemPrompt } from "../profiles/profiles.ts";
import type { BuiltInToolContext, RunScope } from "../tools/delegator.ts";
import { jobFinished } from "../tools/jobs.ts";
import { cancelOpenJobs, resumeJobs } from "../tools/parallel.ts";
import { recordedJobsOf } from "./resume.ts";
import { runApprovals } from "./runApprovals.ts";
import { type ContextSession, callKey } from "./contextSession.ts";
import type { Commands } from "./commands.ts";
import { type Configuration, modelFor } from "./configuration.ts";
import { gateEnvOf } from "./flow.ts";
import { windowSettings } from "../models/presets.ts";
import { delegatorOf } from "./delegation.ts";
import { followRemoteTask } from "./remoteRun.ts";
import type { EventStore } from "../events/store.ts";
import type { Approvals } from "./approvals.ts";
import type { BudgetLedger } from "./budgetLedger.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Registry } from "./registry.ts";
import type { RuntimeTools } from "./runTools.ts";

export type RunParts = {
  readonly config: Configuration;
  readonly store: EventStore;
  readonly registry: Registry;
  readonly tools: RuntimeTools;
  readonly commands: Commands;
  readonly approvals: Approvals;
  readonly budgets: BudgetLedger;
  readonly lifecycle: Lifecycle;
};

/** Whether the log still shows `handle`'s run open on this context. */
export const runOpen = (ac: ContextSession, handle: RunHandle): boolean => ac.view.currentRunId === handle.runId;

/** The run as its tools see it: the port `RunScope`, over the context and its run handle. */
const scopeOf = (parts: RunParts, ac: ContextSession, handle: RunHandle): RunScope => ({
  runId: handle.runId,
  correlationId: handle.correlationId,
  view: () => ac.view,
  children: ac.children,
  storedResult: (id) => ac.storedResults.get(id),
  subordinateCalledBy: (toolCallId) => ac.subordinateCalls.get(callKey(handle.runId, toolCallId)),
  runningChildren: handle.runningChildren,
  get reservedChildren() {
    return handle.reservedChildren;
  },
  set reservedChildren(n: number) {
    handle.reservedChildren = n;
  },
  jobs: handle.jobs,
  approvals: runApprovals(parts, ac, handle),
  get ended() {
    return !runOpen(ac, handle);
  },
  append: (events, metadata) => ac.writer.append(events, metadata),
  stage: (events, metadata) => ac.writer.stage(events, metadata),
  exclusive: (fn) => ac.writer.exclusive(() => fn()),
});

/** The context's window when its preset sets one (a raw model override has none). */
const windowOf = (config: Configuration, presetName: string | null, ac: ContextSession) => {
  const settings = presetName === null ? null : windowSettings(config.options.presets?.[presetName]);
  return settings ? { window: { settings, topics: () => ac.topics() } } : {};
};

/** The actors the context machine invokes for a run (see the requirements above). */
export class Runs {
  constructor(private readonly parts: RunParts) {}

  async run(input: RunActorInput, signal: AbortSignal): Promise<RunOutput> {
    const ac = this.parts.registry.active.get(input.contextId);
    if (!ac) throw new Error(`run ${input.runId} has no context`);
    const { handle, facts: read } = await ac.invokedHandle(input.runId);
    let parked: ParkedStep | null = null;
    let jobsFromLog: ReturnType<typeof recordedJobsOf> | null = null;
    // Not the run `start` just recorded: a parked run going on after its decisions, from the log.
    if (read) {
      parked = parkedStepOf(read, input.runId);
      // Parked on its budget after a ModelCalled (its first call's, which went with its start; one whose
      // compaction's summary did not fit): that ModelCalled stands.
      handle.parkedCall = parkedCallOf(read, input.runId);
      // Parked in another process, or before a restart: its jobs are on the log only.
      if (handle.jobs.size === 0) jobsFromLog = recordedJobsOf(read, input.runId);
    }
    const view = ac.view;
    const stopper = { stop: (id: string) => this.parts.commands.stop(id, "superior") };
    const resuming = ac.takeResuming(handle.runId);
    try {
      // A remote subordinate's run is its A2A task at the other agent: no model, tools or loop here.
      if (view.kind === "remote") return { facts: await followRemoteTask(this.parts, ac, handle, signal) };
      const model = modelFor(this.parts.config, view);
      const profile = this.parts.config.profiles.get(view.profile);
      const tools = await this.parts.tools.forContext(view, signal);
      const scope = scopeOf(this.parts, ac, handle);
      const toolContext = (toolCallId: string, sig: AbortSignal, step?: number): BuiltInToolContext => ({
        contextId: ac.id,
        runId: handle.runId,
        agentNumber: view.agentNumber,
        profile: view.profile,
        toolCallId,
        ...(step === undefined ? {} : { step }),
        signal: sig,
        run: scope,
      });
      const system = systemPrompt(this.parts.config.library, profile, {
        agentNumber: view.agentNumber,
        superior: view.agentNumber === 0 ? "the user" : `A${view.agentNumber - 1}`,
      });
      const recordedJobs = resuming?.jobs ?? jobsFromLog;
      if (recordedJobs)
        resumeJobs(scope, tools.byName, recordedJobs, (id) => toolContext(id, signal, recordedJobs.stepOf.get(id)));
      const facts = await Effect.runPromise(
        messageLoop({
          handle,
          writer: ac.writer,
          agentNumber: view.agentNumber,
          profile: view.profile,
          model: { name: model.model, ...(model.baseURL ? { baseURL: model.baseURL } : {}) },
          modelPort: this.parts.config.options.model,
          systemPrompt: system,
          transcript: () => ac.transcript(),
          resolveReference: (toolCallId) => ac.storedResults.get(toolCallId),
          runOpen: () => runOpen(ac, handle),
          paused: () => ac.actor.getSnapshot().context.paused,
          whileNotPaused: (sig) => whileNotPaused(ac.actor, sig),
          interventionPending: () => ac.actor.getSnapshot().context.interventionPending,
          cancelOpenJobs: () => cancelOpenJobs(stopper, handle.jobs),
          tools: tools.byName,
          toolSpecs: tools.specs,
          limits: this.parts.config.limits,
          parked,
          approvals: scope.approvals,
          toolContext,
          resume: resuming?.plan ?? null,
          ...windowOf(this.parts.config, model.presetName, ac),
          budget: budgetPortFor(this.parts, ac, handle, model),
          gate: gateEnvOf(
            this.parts.config.gate,
            model,
            () => [{ role: "system", content: system }, ...ac.transcript()],
            tools.specs,
          ),
        }),
        { signal },
      );
      return { facts, ...(handle.parked ? { parked: true } : {}) };
    } catch (e) {
      // Left by the machine (a stop, a close): whoever ended it records the end.
      if (signal.aborted) throw e;
      // A bug or a broken store: record it so the run still ends exactly once.
      const message = e instanceof Error ? e.message : String(e);
      const end = () =>
        ac.writer.exclusive(async (append) =>
          runOpen(ac, handle)
            ? append([{ type: "RunFailed", data: { runId: handle.runId, reason: "internal", message } }])
            : [],
        );
      try {
        return { facts: await end() };
      } catch (first) {
        // The first try carried the events staged before the failure (one of them may be what the log
        // refused); they went with it, so the end goes alone once more. A foreign writer is final.
        if (first instanceof ConcurrencyError) throw first;
        return { facts: await end() };
      }
    } finally {
      handle.markUnwound();
    }
  }

  async stop(input: RunActorInput): Promise<RunOutput> {
    const ac = this.parts.registry.active.get(input.contextId)!;
    // A parked run restored here has no handle yet: nothing of it is in flight.
    const handle = await ac.handleOf(input.runId);
    // Jobs first, so they end as cancelled rather than as failed when their subordinates stop.
    for (const job of handle.jobs.values()) {
      if (job.status !== "running") continue;
      job.cancelled = true;
      job.abort.abort(new Error("stopped"));
    }
    await Promise.all(
      [...handle.runningChildren].map((child) => this.parts.commands.stop(child, "superior").catch(() => null)),
    );
    await handle.unwound;
    const facts = await ac.writer.exclusive(async (append) => {
      // The run may have recorded its own end while it unwound.
      if (!runOpen(ac, handle)) return [];
      const events: DomainEvent[] = [];
      const inFlight = handle.inFlight;
      if (inFlight?.kind === "model") {
        events.push({
          type: "ModelCallFailed",
          data: {
            runId: handle.runId,
            step: inFlight.step,
            attempt: inFlight.attempt,
            reason: "aborted",
            message: handle.queued
              ? "The run was stopped while this model call waited in the queue; it was not sent."
              : "The run was stopped during this model call.",
            retryable: false,
            retryInMs: null,
          },
        });
      } else if (inFlight?.kind === "tool") {
        events.push({
          type: "ToolFailed",
          data: {
            runId: handle.runId,
            toolCallId: inFlight.toolCallId,
            name: inFlight.name,
            error: "Stopped while running.",
            repairable: false,
          },
        });
      }
      for (const job of handle.jobs.values()) {
        if (job.status !== "running") continue;
        job.status = "cancelled";
        events.push(jobFinished(handle.runId, job, { status: "cancelled" }));
      }
      events.push({ type: "RunStopped", data: { runId: handle.runId, by: handle.stopRequestedBy ?? "user" } });
      return append(events, { correlationId: handle.correlationId, causationId: handle.runId });
    });
    return { facts };
  }
}
