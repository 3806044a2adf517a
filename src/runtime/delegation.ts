// The runtime's side of the tools' Delegator port: delegation creates, renames, runs and stops contexts through it.
import { asContextId } from "../events/ids.ts";
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
  rename: async (id, name) => {
    const ac = await core.registry.activate(id);
    await ac.writer.append([{ type: "ContextRenamed", data: { name, label: name } }]);
    return ac.view;
  },
  create: async (data) => {
    const created = await core.registry.appendNew(data.contextId, [{ type: "ContextCreated", data }]);
    return (await core.registry.activateNew(data.contextId, created)).view;
  },
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
});
