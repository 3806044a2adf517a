// The runtime's side of the tools' Delegator port: delegation creates, renames, runs and stops contexts through it.
import { asContextId } from "../events/ids.ts";
import { outcomeOf } from "../projections/runOutcome.ts";
import type { Delegator } from "../tools/delegator.ts";
import { configuredPresetOf, enabledProfiles } from "./configuration.ts";
import { start, stopContext } from "./commands.ts";
import type { Core } from "./core.ts";
import { RuntimeError } from "./errors.ts";

export const delegatorOf = (core: Core): Delegator => ({
  clock: core.config.clock,
  limits: core.config.limits,
  profiles: core.config.profiles,
  enabledProfiles: (project) => enabledProfiles(core.config, project),
  configuredPresetOf: (profile, project) => configuredPresetOf(core.config, profile, project),
  view: async (id) => (await core.registry.activate(id)).view,
  lookup: async (id) => {
    try {
      return (await core.registry.activate(id)).view;
    } catch (e) {
      if (e instanceof RuntimeError && e.reason === "not_found") return null;
      throw e;
    }
  },
  rename: async (id, name) => {
    const ac = await core.registry.activate(id);
    await ac.writer.append([{ type: "ContextRenamed", data: { name, label: name } }]);
    return ac.view;
  },
  create: async (data) => (await core.registry.activateUnrecorded(data)).view,
  recordOpening: (id) => core.registry.recordOpening(id),
  startRun: async (id, text, superior) => {
    const ac = await core.registry.activate(asContextId(id));
    try {
      return await ac.serialize(() => start(core, ac, text, superior));
    } catch (e) {
      if (e instanceof RuntimeError && e.reason === "busy") return "busy";
      throw e;
    }
  },
  stop: (id) => stopContext(core, id, "superior"),
  runFor: async (id, call) => {
    const ac = await core.registry.activate(asContextId(id));
    const stream = await core.store.readStream(id);
    const started = stream.find((e) => e.type === "RunStarted" && e.data.superior?.runId === call.runId && e.data.superior.toolCallId === call.toolCallId);
    if (started?.type !== "RunStarted") return null;
    const runId = started.data.runId;
    for (const e of stream) {
      const end = outcomeOf(e);
      if (end?.runId === runId) return { ended: Promise.resolve(end) };
    }
    // Still open: it resumes in this process too (children first), and its end answers this waiter.
    return { ended: ac.outcome(runId) };
  },
});
