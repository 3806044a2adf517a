// The runtime's side of the tools' Delegator port: delegation creates, renames, runs and stops contexts through it.
import { asContextId } from "../events/ids.ts";
import { outcomeOf } from "../projections/runOutcome.ts";
import type { Delegator } from "../tools/delegator.ts";
import { configuredPresetOf, enabledProfiles } from "./configuration.ts";
import type { EventStore } from "../events/store.ts";
import type { Commands } from "./commands.ts";
import type { Configuration } from "./configuration.ts";
import type { Registry } from "./registry.ts";
import { RuntimeError } from "./errors.ts";

export type DelegationParts = {
  readonly config: Configuration;
  readonly registry: Registry;
  readonly commands: Commands;
  readonly store: EventStore;
};

export const delegatorOf = (parts: DelegationParts): Delegator => ({
  clock: parts.config.clock,
  limits: parts.config.limits,
  profiles: parts.config.profiles,
  enabledProfiles: (project) => enabledProfiles(parts.config, project),
  configuredPresetOf: (profile, project) => configuredPresetOf(parts.config, profile, project),
  view: async (id) => (await parts.registry.activate(id)).view,
  lookup: async (id) => {
    try {
      return (await parts.registry.activate(id)).view;
    } catch (e) {
      if (e instanceof RuntimeError && e.reason === "not_found") return null;
      throw e;
    }
  },
  rename: async (id, name) => {
    const ac = await parts.registry.activate(id);
    await ac.writer.append([{ type: "ContextRenamed", data: { name, label: name } }]);
    return ac.view;
  },
  create: async (data) => (await parts.registry.activateUnrecorded(data)).view,
  recordOpening: (id) => parts.registry.recordOpening(id),
  startRun: async (id, text, superior) => {
    const ac = await parts.registry.activate(asContextId(id));
    try {
      return await ac.serialize(() => parts.commands.start(ac, text, superior));
    } catch (e) {
      if (e instanceof RuntimeError && e.reason === "busy") return "busy";
      throw e;
    }
  },
  stop: (id) => parts.commands.stop(id, "superior"),
  runFor: async (id, call) => {
    const ac = await parts.registry.activate(asContextId(id));
    const stream = await parts.store.readStream(id);
    const started = stream.find(
      (e) =>
        e.type === "RunStarted" &&
        e.data.superior?.runId === call.runId &&
        e.data.superior.toolCallId === call.toolCallId,
    );
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
