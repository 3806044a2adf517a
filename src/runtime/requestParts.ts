// What a context's model requests are made of besides its transcript: the model, the system prompt, the tool specs.
// The log records the transcript; these come from the configuration, built as `runs.ts` builds them for a run.
import type { ToolSpec } from "../models/port.ts";
import type { ContextView } from "../projections/contexts.ts";
import { type Profile, type PromptLibrary, systemPrompt } from "../profiles/profiles.ts";
import { configuredPresetOf, modelFor } from "./configuration.ts";
import type { Core } from "./core.ts";

export type RequestParts = { model: string; system: string; tools: ToolSpec[]; /** The configured preset (without an override). */ preset: string };

/** The configuration a fixture records: the prompt library, the profiles and the preset models. */
export type PromptSetup = { library: PromptLibrary; profiles: ReadonlyMap<string, Profile>; presets: Record<string, { model: string }> };

export const requestPartsOf = async (core: Core, view: ContextView): Promise<RequestParts> => {
  const profile = core.config.profiles.get(view.profile);
  const tools = await core.tools.forContext(view);
  return {
    model: modelFor(core.config, view).model,
    system: systemPrompt(core.config.library, profile, {
      agentNumber: view.agentNumber,
      superior: view.agentNumber === 0 ? "the user" : `A${view.agentNumber - 1}`,
    }),
    tools: tools.specs,
    preset: configuredPresetOf(core.config, view.profile, view.project),
  };
};

export const promptSetupOf = (core: Core): PromptSetup => ({
  library: core.config.library,
  profiles: core.config.profiles,
  // The model names only: a preset's endpoint and key variable say nothing about the requests.
  presets: Object.fromEntries(Object.entries(core.config.options.presets ?? {}).map(([k, p]) => [k, { model: p.model }])),
});
