// The context machine through pure transitions: every legal and illegal transition of DESIGN §4.
import { describe, expect, it } from "vitest";
import { createActor, fromPromise, initialTransition, transition } from "xstate";
import {
  contextMachine,
  type ContextMachineInput,
  factsChangeContext,
  type LifecycleStatus,
  type RunActorInput,
  type RunOutput,
  whileNotPaused,
} from "../../src/actors/contextMachine.ts";
import type { DomainEvent, RecordedEvent } from "../../src/events/schema.ts";
import { asContextId, asRunId, type EventId } from "../../src/events/ids.ts";

const contextId = asContextId("ctx-1");
const runId = asRunId("run-1");
let version = 1;
const fact = (e: DomainEvent): RecordedEvent =>
  ({
    ...e,
    globalPosition: ++version,
    streamId: contextId,
    streamVersion: version,
    eventId: `00000000-0000-4000-8000-${String(version).padStart(12, "0")}` as EventId,
    schemaVersion: 1,
    metadata: { correlationId: null, causationId: null, actor: null },
    recordedAt: new Date(0).toISOString(),
  }) as RecordedEvent;

const start = () => ({
  type: "run.start" as const,
  runId,
  facts: [
    fact({ type: "MessageReceived", data: { runId, text: "hi", sender: "user" } }),
    fact({ type: "RunStarted", data: { runId, model: "m", superior: null } }),
  ],
});

/** The invoked actor `id` resolved with the facts that ended the run. */
const done = (id: "run" | "stopRun", facts: RecordedEvent[]) =>
  ({ type: `xstate.done.actor.${id}`, output: { facts } }) as never;

const input = (status: LifecycleStatus, paused = false): ContextMachineInput => ({
  contextId,
  version,
  status,
  paused,
  failure: null,
  runId: null,
  awaitingApproval: [],
  awaitingJobApproval: [],
});
const at = (status: LifecycleStatus) => initialTransition(contextMachine, input(status))[0];
const running = () => transition(contextMachine, at("idle"), start())[0];

describe("when a context is activated", () => {
  it.each(["idle", "stopped", "failed"] as const)("restores the %s state the log shows", (status) => {
    expect(at(status).value).toBe(status);
  });

  it("keeps the paused flag from the log", () => {
    expect(initialTransition(contextMachine, input("idle", true))[0].context.paused).toBe(true);
  });
});

describe("when a run starts", () => {
  it.each(["idle", "stopped", "failed"] as const)(
    "goes from %s to running, with the run id from the appended facts",
    (status) => {
      const [next] = transition(contextMachine, at(status), start());
      expect(next.value).toEqual({ running: "active" });
      expect(next.context.runId).toBe(runId);
    },
  );

  it("refuses a second run while running: a context never runs twice at once", () => {
    const r = running();
    const [next] = transition(contextMachine, r, { ...start(), runId: asRunId("run-2") });
    expect(next.value).toEqual({ running: "active" });
    expect(next.context.runId).toBe(runId);
  });
});

describe("when a run is stopped", () => {
  it("moves to stopping (leaving the invoked run, which aborts it) and not yet to stopped", () => {
    const [next] = transition(contextMachine, running(), { type: "run.stop" });
    expect(next.value).toEqual({ running: "stopping" });
  });

  it("reaches stopped only once the stop's invocation returns with RunStopped, not on the appended fact", () => {
    const [stopping] = transition(contextMachine, running(), { type: "run.stop" });
    const stoppedFact = fact({ type: "RunStopped", data: { runId, by: "user" } });
    const [applied] = transition(contextMachine, stopping, { type: "facts.apply", facts: [stoppedFact] });
    expect(applied.value).toEqual({ running: "stopping" });
    const [next] = transition(contextMachine, applied, done("stopRun", [stoppedFact]));
    expect(next.value).toBe("stopped");
    expect(next.context.runId).toBeNull();
  });

  it("refuses a stop once the log shows the run ended (nothing left to stop)", () => {
    const [ended] = transition(contextMachine, running(), {
      type: "facts.apply",
      facts: [fact({ type: "RunCompleted", data: { runId, response: "ok" } })],
    });
    expect(transition(contextMachine, ended, { type: "run.stop" })[0].value).toEqual({ running: "active" });
  });

  it.each(["idle", "stopped", "failed"] as const)("ignores a stop in %s", (status) => {
    expect(transition(contextMachine, at(status), { type: "run.stop" })[0].value).toBe(status);
  });

  it("refuses a new run while stopping", () => {
    const [stopping] = transition(contextMachine, running(), { type: "run.stop" });
    expect(transition(contextMachine, stopping, start())[0].value).toEqual({ running: "stopping" });
  });
});

describe("when the run's end is appended by the run itself", () => {
  it.each([
    [{ type: "RunCompleted", data: { runId, response: "ok" } }, "idle"],
    [{ type: "RunStopped", data: { runId, by: "superior" } }, "stopped"],
    [{ type: "RunFailed", data: { runId, reason: "model_error", message: "boom" } }, "failed"],
    [{ type: "RunInterrupted", data: { runId } }, "failed"],
  ] as [DomainEvent, LifecycleStatus][])(
    "%s applied stays running (the run is not aborted); the run's result leads to %s",
    (event, status) => {
      const r = running();
      const end = fact(event);
      const [applied] = transition(contextMachine, r, { type: "facts.apply", facts: [end] });
      expect(applied.value).toEqual({ running: "active" });
      expect(applied.context.status).toBe(status);
      const [next] = transition(contextMachine, applied, done("run", [end]));
      expect(next.value).toBe(status);
    },
  );

  it("records why it failed, reason interrupted for RunInterrupted", () => {
    const r = running();
    const [next] = transition(contextMachine, r, done("run", [fact({ type: "RunInterrupted", data: { runId } })]));
    expect(next.context.failure?.reason).toBe("interrupted");
  });

  it("stays running on facts that are not an end", () => {
    const [next] = transition(contextMachine, running(), {
      type: "facts.apply",
      facts: [fact({ type: "ModelCalled", data: { runId, step: 1, attempt: 1, model: "m" } })],
    });
    expect(next.value).toEqual({ running: "active" });
  });
});

describe("when the run's end could not be recorded", () => {
  it("fails on the run's error, keeping why and which run, for close() or the next message to record", () => {
    const [next] = transition(contextMachine, running(), {
      type: "xstate.error.actor.run",
      error: new Error("disk full"),
    } as never);
    expect(next.value).toBe("failed");
    expect(next.context.failure).toEqual({ reason: "internal", message: "disk full" });
    expect(next.context.unrecorded).toEqual({ runId, message: "disk full" });
  });
});

describe("when pause facts are applied", () => {
  it("sets paused on ContextPaused and clears it on a message, ContextResumed or a stop", () => {
    let s = running();
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "ContextPaused", data: { runId } })],
    })[0];
    expect(s.context.paused).toBe(true);
    expect(s.value).toEqual({ running: "active" });
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "InterventionReceived", data: { runId, text: "x" } })],
    })[0];
    expect(s.context.paused).toBe(false);
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "ContextPaused", data: { runId } })],
    })[0];
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "ContextResumed", data: { runId } })],
    })[0];
    expect(s.context.paused).toBe(false);
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "ContextPaused", data: { runId } })],
    })[0];
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "RunStopped", data: { runId, by: "user" } })],
    })[0];
    expect(s.context.paused).toBe(false);
  });
});

describe("when a pause, a resume or an intervention is asked of the machine", () => {
  const pausedFact = () => fact({ type: "ContextPaused", data: { runId } });
  it("allows a pause only while not paused, a resume only while paused, an intervention only while the run is open", () => {
    const idle = at("idle");
    expect(idle.can({ type: "run.pause", facts: [] })).toBe(true);
    expect(idle.can({ type: "run.resume", facts: [] })).toBe(false);
    expect(idle.can({ type: "run.intervene", facts: [] })).toBe(false);
    const r = running();
    expect(r.can({ type: "run.intervene", facts: [] })).toBe(true);
    const paused = transition(contextMachine, r, { type: "run.pause", facts: [pausedFact()] })[0];
    expect(paused.context.paused).toBe(true);
    expect(paused.can({ type: "run.pause", facts: [] })).toBe(false);
    expect(paused.can({ type: "run.resume", facts: [] })).toBe(true);
    // A stop in progress: the run no longer takes interventions.
    const stopping = transition(contextMachine, r, { type: "run.stop" })[0];
    expect(stopping.can({ type: "run.intervene", facts: [] })).toBe(false);
  });

  it("keeps an intervention pending until the next ModelCalled carries it", () => {
    let s = running();
    s = transition(contextMachine, s, {
      type: "run.intervene",
      facts: [fact({ type: "InterventionReceived", data: { runId, text: "x" } })],
    })[0];
    expect(s.context.interventionPending).toBe(true);
    s = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "ModelCalled", data: { runId, step: 2, attempt: 1, model: "m" } })],
    })[0];
    expect(s.context.interventionPending).toBe(false);
  });

  it("holds the run's wait exactly while the machine says paused, whichever way the fact arrived", async () => {
    // The run never ends by itself here: the test watches only its wait at a checkpoint.
    const machine = contextMachine.provide({
      actors: { run: fromPromise<RunOutput, RunActorInput>(() => new Promise(() => undefined)) },
    });
    const actor = createActor(machine, { input: input("idle") }).start();
    actor.send(start());
    const released = async () => {
      let done = false;
      const wait = whileNotPaused(actor, new AbortController().signal).then(() => (done = true));
      await new Promise((r) => setImmediate(r));
      return { done, wait };
    };
    expect((await released()).done).toBe(true);
    // This process's pause, as its command event.
    actor.send({ type: "run.pause", facts: [pausedFact()] });
    const first = await released();
    expect([first.done, actor.getSnapshot().context.paused]).toEqual([false, true]);
    actor.send({ type: "run.resume", facts: [fact({ type: "ContextResumed", data: { runId } })] });
    await first.wait;
    expect(actor.getSnapshot().context.paused).toBe(false);
    // A pause another process recorded, read from the log as facts: the same wait holds.
    actor.send({ type: "facts.apply", facts: [pausedFact()] });
    const second = await released();
    expect([second.done, actor.getSnapshot().context.paused]).toEqual([false, true]);
    // An intervention read the same way releases it.
    actor.send({
      type: "facts.apply",
      facts: [fact({ type: "InterventionReceived", data: { runId, text: "go on" } })],
    });
    await second.wait;
    expect(actor.getSnapshot().context).toMatchObject({ paused: false, interventionPending: true });
    // A wait whose run is aborted rejects rather than hanging.
    actor.send({ type: "facts.apply", facts: [pausedFact()] });
    const abort = new AbortController();
    const aborted = whileNotPaused(actor, abort.signal);
    abort.abort(new Error("stopped"));
    await expect(aborted).rejects.toThrow("stopped");
    actor.stop();
  });
});

describe("when facts are applied twice", () => {
  it("changes nothing the second time (facts at or below the known version are skipped)", () => {
    const paused = fact({ type: "ContextPaused", data: { runId: null } });
    const resumed = fact({ type: "ContextResumed", data: { runId: null } });
    let s = at("idle");
    s = transition(contextMachine, s, { type: "facts.apply", facts: [paused, resumed] })[0];
    const again = transition(contextMachine, s, { type: "facts.apply", facts: [paused] })[0];
    expect(again.context).toEqual(s.context);
  });
});

describe("when a running context's own facts change nothing it holds but its version", () => {
  const ownStep = () => [
    fact({
      type: "ModelReplied",
      data: { runId, step: 1, text: null, toolCalls: [{ id: "c1", name: "t", arguments: {} }], usage: null },
    }),
    fact({ type: "ToolCalled", data: { runId, step: 1, toolCallId: "c1", name: "t", arguments: {} } }),
    fact({ type: "ToolReturned", data: { runId, toolCallId: "c1", name: "t", result: "ok" } }),
    fact({ type: "ModelCalled", data: { runId, step: 2, attempt: 1, model: "m" } }),
  ];

  it("says they need not be sent, and applying them indeed moves nothing but the version", () => {
    const s = running();
    const facts = ownStep();
    expect(factsChangeContext(s.context, facts)).toBe(false);
    const applied = transition(contextMachine, s, { type: "facts.apply", facts })[0];
    expect({ ...applied.context, version: s.context.version }).toEqual(s.context);
    expect(applied.value).toEqual(s.value);
  });

  it("says so for what does change it: a run's end, a pause, an intervention, the ModelCalled that takes one in, an approval", () => {
    const s = running();
    const changing: DomainEvent[] = [
      { type: "RunCompleted", data: { runId, response: "done" } },
      { type: "ContextPaused", data: { runId } },
      { type: "InterventionReceived", data: { runId, text: "also this" } },
      {
        type: "ApprovalRequested",
        data: {
          approvalId: "approval-1" as never,
          runId,
          step: 1,
          toolCallId: "c1",
          tool: "t",
          arguments: {},
          contextId,
          agentNumber: 0,
          expiresAt: null,
        },
      },
    ];
    for (const e of changing) expect(factsChangeContext(s.context, [fact(e)])).toBe(true);
    const intervened = transition(contextMachine, s, {
      type: "facts.apply",
      facts: [fact({ type: "InterventionReceived", data: { runId, text: "x" } })],
    })[0];
    expect(
      factsChangeContext(intervened.context, [
        fact({ type: "ModelCalled", data: { runId, step: 2, attempt: 1, model: "m" } }),
      ]),
    ).toBe(true);
  });

  it("says they change nothing when they are at or below the version it knows", () => {
    const s = running();
    const old = {
      ...fact({ type: "RunCompleted", data: { runId, response: "done" } }),
      streamVersion: s.context.version,
    };
    expect(factsChangeContext(s.context, [old])).toBe(false);
  });
});

describe("when facts of a run driven elsewhere are read while resting", () => {
  it.each([
    ["idle", { type: "RunFailed", data: { runId, reason: "internal", message: "x" } }, "failed"],
    ["failed", { type: "RunCompleted", data: { runId, response: "ok" } }, "idle"],
    ["idle", { type: "RunStopped", data: { runId, by: "user" } }, "stopped"],
  ] as [LifecycleStatus, DomainEvent, LifecycleStatus][])(
    "goes from %s to the state the facts end in",
    (from, event, to) => {
      const [next] = transition(contextMachine, at(from), { type: "facts.apply", facts: [fact(event)] });
      expect(next.value).toBe(to);
    },
  );
});
