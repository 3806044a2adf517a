// The lifecycle of one context as an XState machine (DESIGN §4): the one answer to "is a run in flight here?".
//
// Requirements:
// - States are `idle`, `running` (`active`, `parked`, `stopping`), `stopped`, `failed`; `paused` is a flag in
//   the context, orthogonal to them, and the only record of it in this process: a run waits at its
//   checkpoints while the machine's `paused` holds (`whileNotPaused`), whichever fact set it (this
//   process's `run.pause`, or another process's ContextPaused read with `facts.apply`).
//   Machine events are imperative and dot-named (`run.start`);
//   facts keep their PascalCase names.
// - `running.parked`: the run recorded ApprovalRequested for calls that wait for a person (or BudgetExhausted) and its
//   invocation returned `parked` (its other calls done). Nothing of it is in flight; the context
//   stays running. The decision that settles the last pending approval (`approval.decide`, legal only
//   for an approval of the open run that is pending) goes back to `active`: a new `run` invocation goes
//   on from the log. A stop ends it through `stopping` like any run. While parked, `approvalTimeout`
//   (provided by the runtime) denies what waits too long. A context the log shows running and
//   awaiting approval restores as parked (the run was not cut short: it waits). A `parallel` job's
//   approval (`jobApprovals`) is decidable while the run is active, but parks nothing: the job waits
//   in the run, and a run the log shows open with only such approvals was cut short like any other.
// - `run.start` is legal only from idle, stopped or failed: a running context never runs twice at once.
// - `run.pause` is legal only while not paused, `run.resume` only while paused, `run.intervene` only
//   while a run is active and the log shows it open. Commands ask the machine (`snapshot.can`) before
//   they record the fact; the recorded fact then reaches the machine as that event (`commandEventOf`).
//   An intervention stays pending until the next ModelCalled, which carries it to the model (the
//   same rule as the transcript's).
// - The run is an invoked actor (`run`) in `running.active`. Only its result ends the run: `onDone`
//   goes to the state the run's end leads to, `onError` (no end could be recorded) to `failed`.
//   Leaving `active` (on `run.stop`) aborts its signal, which interrupts the model call or tool in flight.
// - `running.stopping` invokes `stopRun`, which records the stop; its result ends the run the same way.
// - Facts this process appends for its own run (`facts.apply` while running) update the context but
//   never move the machine: the invocation is not aborted behind its back; the runtime sends only those
//   that change more than the version (`factsChangeContext`). Facts read while resting (another process
//   ran this context) move it to the state they end in.
// - The machine's context changes only from appended facts (folded with the one status fold of
//   projections/runStatus.ts) and from a run whose end the log refused (`unrecorded`).
// - Children are spawned with the child's context id as `id` and `systemId` (`child.activate`) and
//   stopped on passivation (`child.passivate`); stopping an actor is not stopping a run.
// - `run.ended` (an action the runtime provides) runs once per run this process drove, as it ends.
import { type AnyActorLogic, assign, enqueueActions, fromPromise, setup } from "xstate";
import type { RecordedEvent } from "../events/schema.ts";
import type { ContextId, RunId } from "../events/ids.ts";
import { type ContextStatus, statusOf } from "../projections/runStatus.ts";
import { applyFacts, type ContextMachineContext, type ContextMachineInput } from "./contextFacts.ts";

export {
  applyFacts,
  type ContextMachineContext,
  type ContextMachineInput,
  factsChangeContext,
} from "./contextFacts.ts";
// What the runtime asks of the machine (its states, by name) lives beside it: contextQueries.ts.
export { type ContextActor, type ContextSnapshot, whileNotPaused } from "./contextQueries.ts";

export type LifecycleStatus = ContextStatus;

/** What the invoked run and stop actors resolve with: the facts that ended the run, or with which it parked. */
export type RunOutput = { facts: RecordedEvent[]; parked?: boolean };
export type RunActorInput = { contextId: ContextId; runId: RunId };

export type ContextMachineEvent =
  | { type: "run.start"; facts: RecordedEvent[]; runId: RunId; interventionPending?: boolean }
  | { type: "run.stop" }
  | { type: "run.pause"; facts: RecordedEvent[] }
  | { type: "run.resume"; facts: RecordedEvent[] }
  | { type: "run.intervene"; facts: RecordedEvent[] }
  | { type: "approval.decide"; approvalId: string; facts: RecordedEvent[] }
  | { type: "facts.apply"; facts: RecordedEvent[] }
  | { type: "child.activate"; contextId: ContextId; logic: AnyActorLogic; input: ContextMachineInput }
  | { type: "child.passivate"; contextId: ContextId };

const factsOf = (event: unknown): RecordedEvent[] => {
  const e = event as { facts?: RecordedEvent[]; output?: RunOutput };
  return e.facts ?? e.output?.facts ?? [];
};

/** Whether the facts an event carries leave the context in `status` (folded onto what is known). */
const endsIn =
  (status: ContextStatus) =>
  ({ context, event }: { context: ContextMachineContext; event: unknown }) =>
    statusOf(factsOf(event), context.status) === status;

// Facts read from the log while no run of this process is going (another process ran this context): follow their end.
const restingFacts = [
  { guard: "endsIdle", target: "#context.idle", actions: "applyFacts" },
  { guard: "endsStopped", target: "#context.stopped", actions: "applyFacts" },
  { guard: "endsFailed", target: "#context.failed", actions: "applyFacts" },
  { actions: "applyFacts" },
] as const;

// A run's result (the run itself, or the stop) ends it in the state its end leads to.
const runResult = {
  onDone: [
    { guard: "endsIdle", target: "#context.idle", actions: ["applyFacts", "run.ended"] },
    { guard: "endsStopped", target: "#context.stopped", actions: ["applyFacts", "run.ended"] },
    { guard: "endsFailed", target: "#context.failed", actions: ["applyFacts", "run.ended"] },
    // Returned with its end not on the log: the run is over all the same.
    { target: "#context.failed", actions: ["recordUnrecordedEnd", "run.ended"] },
  ],
  onError: { target: "#context.failed", actions: ["recordUnrecordedEnd", "run.ended"] },
} as const;

/** The run's invocation returned parked, and after its facts it still waits for approvals (`waiting`) or no longer does. */
const parks =
  (waiting: boolean) =>
  ({ context, event }: { context: ContextMachineContext; event: unknown }) => {
    const e = event as { output?: RunOutput };
    if (!e.output?.parked) return false;
    const after = applyFacts(context, e.output.facts);
    return after.status === "running" && after.awaitingApproval.length > 0 === waiting;
  };

/** The decision is for an approval the open run or one of its jobs waits for (with `last`: the only one left parking the run). */
const decides =
  (last: boolean) =>
  ({ context, event }: { context: ContextMachineContext; event: unknown }) => {
    const id = (event as { approvalId?: string }).approvalId;
    if (context.status !== "running" || id === undefined) return false;
    if (last) return context.awaitingApproval.length === 1 && context.awaitingApproval[0] === id;
    return context.awaitingApproval.includes(id) || context.jobApprovals.includes(id);
  };

// The run's own result: it parked (awaiting approval, or already decided meanwhile: go on at once), or it ended.
const activeResult = {
  onDone: [
    { guard: "parksAwaiting", target: "#context.running.parked", actions: ["applyFacts", "run.parked"] },
    { guard: "parksDecided", target: "#context.running.active", reenter: true, actions: "applyFacts" },
    ...runResult.onDone,
  ],
  onError: runResult.onError,
} as const;

// The run named is the one in flight from now on: a new run (its RunStarted among the facts), or one resumed after a restart.
const runStarts = { "run.start": { target: "#context.running", actions: ["applyFacts", "claimRun"] } } as const;

/** The command event a batch of this process's own facts is (a pause, a resume, an intervention), or null. */
export const commandEventOf = (facts: RecordedEvent[]): ContextMachineEvent | null => {
  if (facts.length !== 1) return null;
  switch (facts[0]!.type) {
    case "ContextPaused":
      return { type: "run.pause", facts };
    case "ContextResumed":
      return { type: "run.resume", facts };
    case "InterventionReceived":
      return { type: "run.intervene", facts };
    case "ApprovalGranted":
    case "ApprovalDenied":
      return {
        type: "approval.decide",
        approvalId: (facts[0] as { data: { approvalId: string } }).data.approvalId,
        facts,
      };
    case "BudgetRestored":
      return { type: "approval.decide", approvalId: facts[0]!.data.exhaustionId, facts };
    default:
      return null;
  }
};

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
    // Provided by the runtime: denies the parked run's approvals as they time out (never resolves otherwise).
    approvalTimeout: fromPromise<void, RunActorInput>(() => new Promise<void>(() => undefined)),
  },
  actions: {
    applyFacts: assign(({ context, event }) => applyFacts(context, factsOf(event))),
    // A resumed run says whether an intervention recorded before the restart still waits for a model call.
    claimRun: assign(({ event }) =>
      event.type === "run.start"
        ? {
            runId: event.runId,
            status: "running" as const,
            failure: null,
            unrecorded: null,
            ...(event.interventionPending ? { interventionPending: true } : {}),
          }
        : {},
    ),
    recordUnrecordedEnd: assign(({ context, event }) => {
      const error = (event as { error?: unknown }).error;
      const message =
        error === undefined
          ? "The run ended without recording its end."
          : error instanceof Error
            ? error.message
            : String(error);
      const runId = context.runId;
      return {
        status: "failed" as const,
        runId: null,
        failure: { reason: "internal" as const, message },
        unrecorded: runId ? { runId, message } : context.unrecorded,
      };
    }),
    // Provided by the runtime: what follows a run's end here (the lease, passivation, waiters).
    "run.ended": () => {},
    // Provided by the runtime: what follows a park here (the lease is let go: any process may decide).
    "run.parked": () => {},
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
    restoredStopped: ({ context }) => context.status === "stopped",
    restoredFailed: ({ context }) => context.status === "failed",
    endsIdle: endsIn("idle"),
    endsStopped: endsIn("stopped"),
    endsFailed: endsIn("failed"),
    /** The log shows the run open: there is something to stop, or to intervene in. */
    runOpen: ({ context }) => context.status === "running",
    notPaused: ({ context }) => !context.paused,
    restoredParked: ({ context }) => context.status === "running" && context.awaitingApproval.length > 0,
    parksAwaiting: parks(true),
    parksDecided: parks(false),
    decides: decides(false),
    decidesTheLast: decides(true),
    /** Facts read from the log say the run no longer waits here: another process went on with it. */
    leftParked: ({ context, event }) => {
      const after = applyFacts(context, factsOf(event));
      return after.status === "running" && after.awaitingApproval.length === 0;
    },
    paused: ({ context }) => context.paused,
  },
}).createMachine({
  id: "context",
  context: ({ input }) => ({
    contextId: input.contextId,
    version: input.version,
    // A run the log shows open with no run here was cut short: it restores as failed, unless it waits for approval.
    status: input.status === "running" && input.awaitingApproval.length === 0 ? "failed" : input.status,
    paused: input.paused,
    interventionPending: false,
    runId: input.status === "running" && input.awaitingApproval.length > 0 ? input.runId : null,
    awaitingApproval: input.status === "running" ? input.awaitingApproval : [],
    jobApprovals: input.status === "running" ? input.awaitingJobApproval : [],
    failure: input.failure,
    unrecorded: null,
  }),
  initial: "restoring",
  on: {
    "child.activate": { actions: "spawnContextChild" },
    "child.passivate": { actions: "stopContextChild" },
    // Legal in any state (a context at rest can be paused before its next run); the guard is the rule.
    "run.pause": { guard: "notPaused", actions: "applyFacts" },
    "run.resume": { guard: "paused", actions: "applyFacts" },
  },
  states: {
    // Transient: picks the state the log says this context is in.
    restoring: {
      always: [
        { guard: "restoredParked", target: "#context.running.parked" },
        { guard: "restoredStopped", target: "stopped" },
        { guard: "restoredFailed", target: "failed" },
        { target: "idle" },
      ],
    },
    idle: { on: { ...runStarts, "facts.apply": restingFacts } },
    stopped: { on: { ...runStarts, "facts.apply": restingFacts } },
    failed: { on: { ...runStarts, "facts.apply": restingFacts } },
    running: {
      initial: "active",
      // This process's own facts: the context follows them, the state waits for the invocation's result.
      // A decision while the run still works on the reply's other calls is kept for when it parks.
      on: { "facts.apply": { actions: "applyFacts" }, "approval.decide": { guard: "decides", actions: "applyFacts" } },
      states: {
        active: {
          invoke: {
            id: "run",
            src: "run",
            input: ({ context }) => ({ contextId: context.contextId, runId: context.runId! }),
            ...activeResult,
          },
          on: {
            "run.stop": { guard: "runOpen", target: "stopping" },
            "run.intervene": { guard: "runOpen", actions: "applyFacts" },
          },
        },
        parked: {
          invoke: {
            id: "approvalTimeout",
            src: "approvalTimeout",
            input: ({ context }) => ({ contextId: context.contextId, runId: context.runId! }),
          },
          on: {
            "approval.decide": [
              { guard: "decidesTheLast", target: "active", actions: "applyFacts" },
              { guard: "decides", actions: "applyFacts" },
            ],
            "run.stop": { guard: "runOpen", target: "stopping" },
            "run.intervene": { guard: "runOpen", actions: "applyFacts" },
            // Read from the log (another process): an end ends it here too; a run that went on elsewhere is not ours.
            "facts.apply": [
              ...restingFacts.slice(0, 3),
              { guard: "leftParked", target: "#context.failed", actions: "applyFacts" },
              { actions: "applyFacts" },
            ],
          },
        },
        stopping: {
          invoke: {
            id: "stopRun",
            src: "stopRun",
            input: ({ context }) => ({ contextId: context.contextId, runId: context.runId! }),
            ...runResult,
          },
        },
      },
    },
  },
});

export type ContextMachine = typeof contextMachine;
