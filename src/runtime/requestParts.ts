// What a context's model requests are made of besides its transcript: the model, the system prompt, the tool specs.
// The log records the transcript; these come from the configuration, built as `runs.ts` builds them for a run.
import type { ToolSpec } from "../models/port.ts";
import type { ContextView } from "../projections/contexts.ts";
import { type Profile, type PromptLibrary, systemPrompt } from "../profiles/profiles.ts";
import { configuredPresetOf, modelFor } from "./configuration.ts";
import type { Configuration } from "./configuration.ts";
import type { RuntimeTools } from "./runTools.ts";

export type RequestParts = {
  model: string;
  system: string;
  tools: ToolSpec[];
  /** The configured preset (without an override). */ preset: string;
};

/** The configuration a fixture records: the prompt library, the profiles and the preset models. */
export type PromptSetup = {
  library: PromptLibrary;
  profiles: ReadonlyMap<string, Profile>;
  presets: Record<string, { model: string }>;
};

export const requestPartsOf = async (
  parts: { readonly config: Configuration; readonly tools: RuntimeTools },
  view: ContextView,
): Promise<RequestParts> => {
  const profile = parts.config.profiles.get(view.profile);
  const tools = await parts.tools.forContext(view);
  return {
    model: modelFor(parts.config, view).model,
    system: systemPrompt(parts.config.library, profile, {
      agentNumber: view.agentNumber,
      superior: view.agentNumber === 0 ? "the user" : `A${view.agentNumber - 1}`,
    }),
    tools: tools.specs,
    preset: configuredPresetOf(parts.config, view.profile, view.project),
  };
};

export const promptSetupOf = (config: Configuration): PromptSetup => ({
  library: config.library,
  profiles: config.profiles,
  // The model names only: a preset's endpoint and key variable say nothing about the requests.
  presets: Object.fromEntries(Object.entries(config.options.presets ?? {}).map(([k, p]) => [k, { model: p.model }])),
});
