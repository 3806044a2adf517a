// The run commands on one context: a message (a run or an intervention), stop, pause, resume.
//
// Requirements:
// - Commands to one context are serialized; the machine says whether a run is in flight, and each
//   command waits for it where it must (a new run starts only once the machine is at rest). A wait on a
//   machine a close has stopped is refused as closed; a stop whose run ended answers with that end.
// - A message to a run in flight that the log still shows open is an intervention of that run;
//   otherwise it records MessageReceived, RunStarted and the run's first ModelCalled in one append (opened,
//   for a fresh subordinate, by its ContextCreated: the writer holds it until then), then sends `run.start`
//   (legal only from idle, stopped or failed). A remote subordinate's run records RemoteTaskSent in place of the
//   ModelCalled (its A2A task, sent only after: remoteRun.ts). Once close() has begun, a message is refused as closed before
//   its run's start is appended; a start already being appended ends as interrupted, as close ends a run in flight.
// - A stop is the machine event `run.stop`; the invoked `stopRun` records it once. Stopping a
//   context with no run in flight is a no-op.
// - Pause, resume and interventions are the machine events `run.pause`, `run.resume`, `run.intervene`:
//   the command asks the machine whether it may (its guards), in the writer's turn, then records the
//   fact, which reaches the machine as that event. Pausing a paused context, or resuming one that is
//   not paused, records nothing.
import { waitFor } from "xstate";
import type { Superior } from "../events/schema.ts";
import { asRunId } from "../events/ids.ts";
import {
  acceptsMessage,
  type ContextSnapshot,
  isRunning,
  isStoppedActor,
  openRunId,
} from "../actors/contextQueries.ts";
import type { RunOutcome } from "../projections/runOutcome.ts";
import type { ContextSession } from "./contextSession.ts";
import { modelFor } from "./configuration.ts";
import type { EventStore } from "../events/store.ts";
import type { Configuration } from "./configuration.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { interruptInFlight } from "./recovery.ts";
import type { Registry } from "./registry.ts";
import { RuntimeError } from "./errors.ts";

/** What a message started: the run that takes it (a new one, or the running one for an intervention) and its end. */
export type Started = { runId: string; intervention: boolean; ended: Promise<RunOutcome> };

const snapshotOf = (ac: ContextSession): ContextSnapshot => ac.actor.getSnapshot();

/**
 * Waits until the machine's state satisfies `ready`. A machine a close stopped answers no more, and the wait
 * is refused as closed: XState's waitFor rejects a wait it had begun with an error of its own, and would
 * never settle one begun after.
 */
const machineReady = async (ac: ContextSession, ready: (s: ContextSnapshot) => boolean): Promise<void> => {
  const stopped = () => isStoppedActor(ac.actor);
  const closed = () => new RuntimeError("closed", `The runtime closed while a command waited for context '${ac.id}'.`);
  if (stopped()) throw closed();
  try {
    await waitFor(ac.actor, ready, { timeout: Infinity });
  } catch (e) {
    throw stopped() ? closed() : e;
  }
};

/** Waits until the machine has no run in flight. */
const atRest = (ac: ContextSession): Promise<void> => machineReady(ac, (s) => !isRunning(s));

/** Waits until the machine is at rest, or has a run in flight that the log shows open (not stopping, not ending). */
const steady = (ac: ContextSession): Promise<void> => machineReady(ac, (s) => !isRunning(s) || acceptsMessage(s));

/** Where a user's message came from, and the trace it continues (a W3C traceparent), recorded with the run's start. */
export type MessageOrigin = { via?: "mcp" | "a2a"; traceparent?: string; messageId?: string };

export type CommandParts = {
  readonly registry: Registry;
  readonly config: Configuration;
  readonly store: EventStore;
  readonly lifecycle: Lifecycle;
};

/** The run commands on one context (see the requirements above). */
export class Commands {
  constructor(private readonly parts: CommandParts) {}

  /** A message that reaches its run's start after close() began is refused: no run of this runtime would take it. */
  private refuseIfClosed(): void {
    if (this.parts.lifecycle.closed)
      throw new RuntimeError("closed", "The runtime closed before the message started a run.");
  }

  /** A message: an intervention for a run in flight, else a new run. */
  async deliver(ac: ContextSession, text: string, origin: MessageOrigin = {}): Promise<Started> {
    await steady(ac);
    const s = snapshotOf(ac);
    // A parked run restored here has no handle yet: made from the log, it takes the message as any run does.
    const handle = acceptsMessage(s) ? await ac.handleOf(openRunId(s)!) : null;
    if (handle && acceptsMessage(snapshotOf(ac))) {
      const delivered = await ac.writer.exclusive(async (append) => {
        // Asked in the writer's turn: the run may have appended its end meanwhile.
        if (!acceptsMessage(snapshotOf(ac)) || !snapshotOf(ac).can({ type: "run.intervene", facts: [] })) return false;
        await append([{ type: "InterventionReceived", data: { runId: handle.runId, text } }], {
          correlationId: handle.correlationId,
        });
        return true;
      });
      if (delivered) return { runId: handle.runId, intervention: true, ended: ac.outcome(handle.runId) };
    }
    return this.start(ac, text, null, origin);
  }

  /**
   * Records the message and the run's start, then starts the machine's run. A close that begins meanwhile
   * refuses it before its start is appended, or, once appended (close saw no run here), ends it as close ends
   * a run in flight: recorded as interrupted, its waiters answered.
   */
  async start(
    ac: ContextSession,
    text: string,
    superior: Superior | null,
    origin: MessageOrigin = {},
  ): Promise<Started> {
    await atRest(ac);
    this.refuseIfClosed();
    await ac.takeLease();
    const runId = asRunId(this.parts.config.clock.uuid());
    const remote = ac.view.kind === "remote" ? this.parts.config.profiles.get(ac.view.profile)?.remote : undefined;
    if (ac.view.kind === "remote" && !remote)
      throw new RuntimeError(
        "invalid",
        `Context '${ac.id}' is a remote subordinate, and its profile '${ac.view.profile}' has no remote agent configured here.`,
      );
    const model = remote ? { model: `a2a ${remote.url}` } : modelFor(this.parts.config, ac.view);
    const correlationId = superior
      ? (this.parts.registry.active.get(superior.contextId)?.run?.correlationId ?? superior.runId)
      : runId;
    // The run's first model call is recorded with its start: one append, before any effect of the run.
    const facts = await ac.writer.exclusive((append) => {
      this.refuseIfClosed();
      ac.writer.stage(
        [
          {
            type: "MessageReceived",
            data: { runId, text, sender: superior ? "superior" : "user", ...(origin.via ? { via: origin.via } : {}) },
          },
          { type: "RunStarted", data: { runId, model: model.model, superior } },
        ],
        {
          correlationId,
          causationId: superior?.toolCallId ?? origin.messageId ?? null,
          ...(origin.traceparent ? { traceparent: origin.traceparent } : {}),
        },
      );
      // A remote subordinate's first effect is its A2A task, recorded before it is sent (remoteRun.ts).
      if (remote) {
        // A continued child continues its conversation there too (the same agent's A2A context).
        const remoteContextId = ac.view.remote?.url === remote.url ? ac.view.remote.remoteContextId : null;
        return append(
          [
            {
              type: "RemoteTaskSent",
              data: { runId, url: remote.url, skill: remote.skill ?? null, messageId: runId, remoteContextId },
            },
          ],
          { correlationId, causationId: runId },
        );
      }
      return append([{ type: "ModelCalled", data: { runId, step: 1, attempt: 1, model: model.model } }], {
        correlationId,
        causationId: runId,
      });
    });
    ac.started(runId, correlationId, !remote);
    const outcome = ac.outcome(runId);
    if (this.parts.lifecycle.closed) await interruptInFlight([{ ac, inFlight: true, unrecorded: null }]);
    else ac.startRun(runId, facts);
    return { runId, intervention: false, ended: outcome };
  }

  async stop(id: string, by: "user" | "superior"): Promise<RunOutcome | null> {
    const ac = await this.parts.registry.activate(id);
    return ac.serialize(async () => {
      const s = snapshotOf(ac);
      if (!isRunning(s)) return null;
      // A parked run holds no lease: it is taken (catching up with the log, which may have moved the run on).
      const runId = await ac.underLease(
        async () => {
          const now = snapshotOf(ac);
          if (!isRunning(now)) return null;
          // A run already stopping or ending is waited for; its end is the answer.
          if (acceptsMessage(now)) {
            await ac.requestStop(openRunId(now)!, by);
          }
          return openRunId(now)!;
        },
        { busy: "refuse" },
      );
      if (!runId) return ac.lastEnd?.runId === openRunId(s) ? ac.lastEnd : null;
      const outcome = await ac.outcome(runId);
      // The run has ended: a close that stopped the machine meanwhile does not take that answer away.
      await atRest(ac).catch((e: unknown) => {
        if (!(e instanceof RuntimeError && e.reason === "closed")) throw e;
      });
      return outcome;
    });
  }

  async pause(id: string): Promise<void> {
    const ac = await this.parts.registry.activate(id);
    await ac.serialize(async () => {
      await steady(ac);
      await recordPause(ac, "run.pause");
    });
  }

  async resume(id: string): Promise<void> {
    const ac = await this.parts.registry.activate(id);
    await ac.serialize(() => recordPause(ac, "run.resume"));
  }
}

/** Records a pause or a resume if the machine allows it now (its guards say; nothing is written otherwise). */
const recordPause = async (ac: ContextSession, type: "run.pause" | "run.resume"): Promise<void> => {
  await ac.writer.exclusive(async (append) => {
    const s = snapshotOf(ac);
    if (!s.can({ type, facts: [] })) return;
    const runId = isRunning(s) && s.context.status === "running" ? (ac.run?.runId ?? null) : null;
    await append([{ type: type === "run.pause" ? "ContextPaused" : "ContextResumed", data: { runId } }]);
  });
};
