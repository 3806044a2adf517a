// The runtime's configuration, read and checked once at start: limits, prompts, profiles, presets, the model per context.
//
// Requirements:
// - A bad option (missing prompts or profiles folder, a profiles list that is not one, a store or model
//   that is not a port) is a RuntimeError naming the option, before the log is touched.
// - Which profiles a project offers and which preset a profile runs with are answered here, once.
import { join } from "node:path";
import { BUNDLED_PROMPTS_DIR, ConfigError, loadProfiles, loadPromptLibrary, type Profile, type PromptLibrary } from "../profiles/profiles.ts";
import { configuredPreset, effectiveModel } from "../models/presets.ts";
import type { ContextView } from "../projections/contexts.ts";
import { systemClock, type Clock } from "../events/clock.ts";
import { DEFAULT_LIMITS, type Limits, type RuntimeOptions } from "./api.ts";
import { checkFolder, checkOptionalString, checkOptions, checkPromptsDir, invalid } from "./validate.ts";

export type Configuration = {
  readonly options: RuntimeOptions;
  readonly limits: Limits;
  readonly clock: Clock;
  readonly library: PromptLibrary;
  readonly profiles: Map<string, Profile>;
};

/** Checks the options and reads the prompt library and profiles; a bad folder or profile file is a refusal naming the option. */
export const loadConfiguration = (options: RuntimeOptions): Configuration => {
  checkOptions(options, "options");
  if (typeof options.store?.append !== "function") throw invalid("store", "an EventStore (openPgliteStore or openPostgresStore)", String(options.store));
  if (typeof options.model?.call !== "function") throw invalid("model", "a ModelPort (openAIModel or scriptedModel)", String(options.model));
  checkOptionalString("owner", options.owner);
  const promptsDir = options.promptsDir === undefined ? BUNDLED_PROMPTS_DIR : checkPromptsDir(options.promptsDir);
  const extra = options.profiles ?? [];
  if (!Array.isArray(extra)) throw invalid("profiles", "an array of folder paths", typeof extra);
  extra.forEach((dir, i) => checkFolder(`profiles[${i}]`, dir));
  let library: PromptLibrary;
  try {
    library = loadPromptLibrary(promptsDir);
  } catch (e) {
    throw invalid("promptsDir", "a readable prompts folder", (e as Error).message);
  }
  let profiles: Map<string, Profile>;
  try {
    profiles = loadProfiles([join(promptsDir, "profiles"), ...extra]);
  } catch (e) {
    if (e instanceof ConfigError) throw invalid("profiles", "folders of valid profile.json files", e.message);
    throw invalid("profiles", "readable profile folders", (e as Error).message);
  }
  return { options, limits: { ...DEFAULT_LIMITS, ...options.limits }, clock: options.clock ?? systemClock, library, profiles };
};

/** The profiles a project offers: enabled ones not disabled by the project. */
export const enabledProfiles = (config: Configuration, project: string | null): string[] => {
  const disabled = new Set(project ? (config.options.projects?.[project]?.disabledProfiles ?? []) : []);
  return [...config.profiles.values()].filter((p) => p.enabled && !disabled.has(p.key)).map((p) => p.key);
};

export const configuredPresetOf = (config: Configuration, profile: string, project: string | null): string =>
  configuredPreset({
    presets: config.options.presets ?? {},
    projects: config.options.projects ?? {},
    profileModelPreset: config.profiles.get(profile)?.modelPreset,
    project,
    profile,
  });

/** The model a context's runs use: its override, else its profile's and project's preset. */
export const modelFor = (config: Configuration, view: ContextView) =>
  effectiveModel(view.modelOverride, configuredPresetOf(config, view.profile, view.project), config.options.presets ?? {});
