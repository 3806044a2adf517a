// The run commands on one context: a message (a run or an intervention), stop, pause, resume.
//
// Requirements:
// - Commands to one context are serialized; each waits until the actor agrees with the log.
// - A message to a running context is an intervention of that run; otherwise it records MessageReceived
//   and RunStarted, then starts the actor's run (legal only from idle, stopped or failed).
// - A stop is recorded once, by the invoked `stopRun`; stopping a context that is not running is a no-op.
import { waitFor } from "xstate";
import type { Superior } from "../events/schema.ts";
import { asRunId } from "../events/ids.ts";
import { RunHandle } from "../actors/runHandle.ts";
import type { RunOutcome } from "../projections/runOutcome.ts";
import type { ActiveContext } from "./activeContext.ts";
import { modelFor } from "./configuration.ts";
import type { Core } from "./core.ts";
import { RuntimeError } from "./errors.ts";
import { takeLease } from "./recovery.ts";

/** What a message started: the run that takes it (a new one, or the running one for an intervention) and its end. */
export type Started = { runId: string; intervention: boolean; ended: Promise<RunOutcome> };

/** Waits until the actor agrees with the log: not stopping, and not still `running` for a run that has ended. */
export const settle = async (ac: ActiveContext): Promise<void> => {
  const runEnded = () => !ac.run || ac.run.terminal !== null;
  await waitFor(ac.actor, (s) => !s.matches({ running: "stopping" }) && !(s.matches("running") && runEnded()), { timeout: Infinity });
};

/** A message: an intervention for a running context, else a new run. */
export const deliver = async (core: Core, ac: ActiveContext, text: string): Promise<Started> => {
  await settle(ac);
  if (ac.actor.getSnapshot().matches("running") && ac.run && !ac.run.terminal) {
    const handle = ac.run;
    const delivered = await ac.writer.exclusive(async (append) => {
      if (handle.terminal) return false;
      await append([{ type: "InterventionReceived", data: { runId: handle.runId, text } }], { correlationId: handle.correlationId });
      return true;
    });
    if (delivered) return { runId: handle.runId, intervention: true, ended: ac.outcome(handle.runId) };
    await settle(ac);
  }
  return start(core, ac, text, null);
};

/** Records the message and the run's start, then starts the actor's run. */
export const start = async (core: Core, ac: ActiveContext, text: string, superior: Superior | null): Promise<Started> => {
  await settle(ac);
  if (ac.actor.getSnapshot().matches("running")) throw new RuntimeError("invalid", `Context '${ac.id}' is still running.`);
  await takeLease(core, ac);
  const runId = asRunId(core.config.clock.uuid());
  const model = modelFor(core.config, ac.view);
  const correlationId = superior ? (core.registry.active.get(superior.contextId)?.run?.correlationId ?? superior.runId) : runId;
  const facts = await ac.writer.append(
    [
      { type: "MessageReceived", data: { runId, text, sender: superior ? "superior" : "user" } },
      { type: "RunStarted", data: { runId, model: model.model, superior } },
    ],
    { correlationId, causationId: superior?.toolCallId ?? null },
  );
  ac.run = new RunHandle(ac.id, runId, correlationId);
  const outcome = ac.outcome(runId);
  ac.actor.send({ type: "run.start", facts, runId });
  return { runId, intervention: false, ended: outcome };
};

export const stopContext = async (core: Core, id: string, by: "user" | "superior"): Promise<RunOutcome | null> => {
  const ac = await core.registry.activate(id);
  return ac.serialize(async () => {
    if (!ac.actor.getSnapshot().matches("running") || !ac.run) return null;
    const handle = ac.run;
    if (!handle.terminal) {
      handle.stopRequestedBy ??= by;
      ac.actor.send({ type: "run.stop" });
    }
    const outcome = await ac.outcome(handle.runId);
    await settle(ac);
    return outcome;
  });
};

export const pause = async (core: Core, id: string): Promise<void> => {
  const ac = await core.registry.activate(id);
  await ac.serialize(async () => {
    await settle(ac);
    if (ac.view.paused) return;
    const runId = ac.actor.getSnapshot().matches("running") ? (ac.run?.runId ?? null) : null;
    await ac.writer.append([{ type: "ContextPaused", data: { runId } }]);
    if (runId) ac.run?.setPaused(true);
  });
};

export const resume = async (core: Core, id: string): Promise<void> => {
  const ac = await core.registry.activate(id);
  await ac.serialize(async () => {
    if (!ac.view.paused) return;
    const runId = ac.run && !ac.run.terminal ? ac.run.runId : null;
    await ac.writer.append([{ type: "ContextResumed", data: { runId } }]);
    ac.run?.setPaused(false);
  });
};
