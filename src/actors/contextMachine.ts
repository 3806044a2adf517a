// The lifecycle of one context as an XState machine (DESIGN §4).
//
// Requirements:
// - States are `idle`, `running`, `stopped`, `failed`; `paused` is a flag in the context, orthogonal to them.
// - `run.start` is legal only from idle, stopped or failed: a running context never runs twice at once.
// - The run is an invoked actor (`run`) in `running.active`; leaving that state (on `run.stop`) aborts
//   its signal, which interrupts the model call or tool in flight.
// - `running.stopping` invokes `stopRun`, which records the stop; the machine reaches `stopped` only
//   once that fact is appended.
// - The machine's context changes only from appended events (`facts.apply`, and the facts carried by
//   `run.start` and by the results of `run` and `stopRun`).
// - Children are spawned with the child's context id as `id` and `systemId` (`child.activate`) and
//   stopped on passivation (`child.passivate`); stopping an actor is not stopping a run.
import { type AnyActorLogic, assign, enqueueActions, fromPromise, setup } from "xstate";
import type { RecordedEvent, RunFailureReason } from "../events/schema.ts";
import type { ContextId, RunId } from "../events/ids.ts";
import { INTERRUPTED_MESSAGE } from "../projections/contexts.ts";

export type LifecycleStatus = "idle" | "running" | "stopped" | "failed";

export type ContextMachineContext = {
  contextId: ContextId;
  /** The stream version of the last fact applied. */
  version: number;
  paused: boolean;
  runId: RunId | null;
  failure: { reason: RunFailureReason; message: string } | null;
  /** The status the log showed when this actor was activated. */
  restoredStatus: LifecycleStatus;
};

export type ContextMachineInput = {
  contextId: ContextId;
  version: number;
  status: LifecycleStatus;
  paused: boolean;
  failure: ContextMachineContext["failure"];
};

/** What the invoked run and stop actors resolve with: the facts that ended the run. */
export type RunOutput = { facts: RecordedEvent[] };
export type RunActorInput = { contextId: ContextId; runId: RunId };

export type ContextMachineEvent =
  | { type: "run.start"; facts: RecordedEvent[]; runId: RunId }
  | { type: "run.stop" }
  | { type: "facts.apply"; facts: RecordedEvent[] }
  | { type: "child.activate"; contextId: ContextId; logic: AnyActorLogic; input: ContextMachineInput }
  | { type: "child.passivate"; contextId: ContextId };

/** Pure: the machine context after the given facts. */
export const applyFacts = (ctx: ContextMachineContext, facts: readonly RecordedEvent[]): ContextMachineContext => {
  let next = ctx;
  for (const fact of facts) {
    if (fact.streamVersion <= next.version) continue;
    next = { ...next, version: fact.streamVersion };
    switch (fact.type) {
      case "RunStarted":
        next = { ...next, runId: fact.data.runId, failure: null, paused: false };
        break;
      case "MessageReceived":
      case "InterventionReceived":
      case "ContextResumed":
        next = { ...next, paused: false };
        break;
      case "ContextPaused":
        next = { ...next, paused: true };
        break;
      case "RunCompleted":
        next = { ...next, runId: null };
        break;
      case "RunStopped":
        next = { ...next, runId: null, paused: false };
        break;
      case "RunFailed":
        next = { ...next, runId: null, failure: { reason: fact.data.reason, message: fact.data.message } };
        break;
      case "RunInterrupted":
        next = { ...next, runId: null, failure: { reason: "interrupted", message: INTERRUPTED_MESSAGE } };
        break;
      default:
        break;
    }
  }
  return next;
};

/** The status the last terminal fact among `facts` leads to, if any. */
export const terminalStatus = (facts: readonly RecordedEvent[]): LifecycleStatus | null => {
  for (let i = facts.length - 1; i >= 0; i--) {
    const t = facts[i]!.type;
    if (t === "RunCompleted") return "idle";
    if (t === "RunStopped") return "stopped";
    if (t === "RunFailed" || t === "RunInterrupted") return "failed";
  }
  return null;
};

const endsIn = (status: LifecycleStatus) => ({ event }: { event: unknown }) => {
  const e = event as { facts?: RecordedEvent[]; output?: RunOutput };
  const facts = e.facts ?? e.output?.facts ?? [];
  return terminalStatus(facts) === status;
};

const factsOf = (event: unknown): RecordedEvent[] => {
  const e = event as { facts?: RecordedEvent[]; output?: RunOutput };
  return e.facts ?? e.output?.facts ?? [];
};

// Facts read from the log while no local run is going (another process ran this context): follow their end.
const restingFacts = [
  { guard: "endsIdle", target: "#context.idle", actions: "applyFacts" },
  { guard: "endsStopped", target: "#context.stopped", actions: "applyFacts" },
  { guard: "endsFailed", target: "#context.failed", actions: "applyFacts" },
  { actions: "applyFacts" },
] as const;

export const contextMachine = setup({
  types: {
    context: {} as ContextMachineContext,
    input: {} as ContextMachineInput,
    events: {} as ContextMachineEvent,
  },
  actors: {
    // Provided by the runtime: the message loop, and the recording of a stop.
    run: fromPromise<RunOutput, RunActorInput>(async () => {
      throw new Error("contextMachine: the `run` actor must be provided");
    }),
    stopRun: fromPromise<RunOutput, RunActorInput>(async () => {
      throw new Error("contextMachine: the `stopRun` actor must be provided");
    }),
  },
  actions: {
    applyFacts: assign(({ context, event }) => applyFacts(context, factsOf(event))),
    spawnContextChild: enqueueActions(({ enqueue, event }) => {
      if (event.type !== "child.activate") return;
      // The child's logic arrives with the event: a context machine spawns more of itself.
      (enqueue.spawnChild as (logic: AnyActorLogic, options: object) => void)(event.logic, {
        id: event.contextId,
        systemId: event.contextId,
        input: event.input,
      });
    }),
    stopContextChild: enqueueActions(({ enqueue, event }) => {
      if (event.type !== "child.passivate") return;
      enqueue.stopChild(event.contextId);
    }),
  },
  guards: {
    restoredStopped: ({ context }) => context.restoredStatus === "stopped",
    restoredFailed: ({ context }) => context.restoredStatus === "failed",
    endsIdle: endsIn("idle"),
    endsStopped: endsIn("stopped"),
    endsFailed: endsIn("failed"),
  },
}).createMachine({
  id: "context",
  context: ({ input }) => ({
    contextId: input.contextId,
    version: input.version,
    paused: input.paused,
    runId: null,
    failure: input.failure,
    restoredStatus: input.status,
  }),
  initial: "restoring",
  on: {
    "child.activate": { actions: "spawnContextChild" },
    "child.passivate": { actions: "stopContextChild" },
  },
  states: {
    // Transient: picks the state the log says this context is in.
    restoring: {
      always: [
        { guard: "restoredStopped", target: "stopped" },
        { guard: "restoredFailed", target: "failed" },
        { target: "idle" },
      ],
    },
    idle: { on: { "run.start": { target: "running", actions: "applyFacts" }, "facts.apply": restingFacts } },
    stopped: { on: { "run.start": { target: "running", actions: "applyFacts" }, "facts.apply": restingFacts } },
    failed: { on: { "run.start": { target: "running", actions: "applyFacts" }, "facts.apply": restingFacts } },
    running: {
      initial: "active",
      on: {
        "facts.apply": [
          { guard: "endsIdle", target: "idle", actions: "applyFacts" },
          { guard: "endsStopped", target: "stopped", actions: "applyFacts" },
          { guard: "endsFailed", target: "failed", actions: "applyFacts" },
          { actions: "applyFacts" },
        ],
      },
      states: {
        active: {
          invoke: {
            src: "run",
            input: ({ context }) => ({ contextId: context.contextId, runId: context.runId! }),
            onDone: [
              { guard: "endsIdle", target: "#context.idle", actions: "applyFacts" },
              { guard: "endsStopped", target: "#context.stopped", actions: "applyFacts" },
              { guard: "endsFailed", target: "#context.failed", actions: "applyFacts" },
            ],
            // The run records its own failures; a rejection means the log itself is unreachable.
            onError: { target: "#context.failed" },
          },
          on: { "run.stop": { target: "stopping" } },
        },
        stopping: {
          invoke: {
            src: "stopRun",
            input: ({ context }) => ({ contextId: context.contextId, runId: context.runId! }),
            onDone: [
              { guard: "endsIdle", target: "#context.idle", actions: "applyFacts" },
              { guard: "endsStopped", target: "#context.stopped", actions: "applyFacts" },
              { guard: "endsFailed", target: "#context.failed", actions: "applyFacts" },
            ],
            onError: { target: "#context.failed" },
          },
        },
      },
    },
  },
});

export type ContextMachine = typeof contextMachine;
