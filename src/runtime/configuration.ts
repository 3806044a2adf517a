// The runtime's configuration, read and checked once at start: limits, prompts, profiles, presets, the model per context.
//
// Requirements:
// - A bad option (missing prompts or profiles folder, a profiles list that is not one, a store or model
//   that is not a port) is a RuntimeError naming the option, before the log is touched.
// - Approval settings (`approvals`, projects' and tools' `needsApproval`) are checked here too (approvalPolicy.ts).
// - Concurrency caps and rate limits (`limits.maxConcurrentModelCalls`, presets' flow settings) make the call gate (flow.ts).
// - Which profiles a project offers, which preset a profile runs with and which MCP servers a context may use
//   are answered here; a profile or project naming an MCP server that is not configured is refused at start.
import { join } from "node:path";
import {
  BUNDLED_PROMPTS_DIR,
  ConfigError,
  PROFILE_DEFAULT,
  loadProfiles,
  loadPromptLibrary,
  type Profile,
  type PromptLibrary,
} from "../profiles/profiles.ts";
import { configuredPreset, effectiveModel } from "../models/presets.ts";
import type { ContextView } from "../projections/contexts.ts";
import { allowedMcpServers, mcpSecretValues, McpServersSchema, type McpServers } from "../tools/mcpConfig.ts";
import { addSecrets } from "../events/redact.ts";
import { systemClock, type Clock } from "../events/clock.ts";
import { markSecretEnv } from "../events/redact.ts";
import { actorzeroTracer } from "../telemetry/tracing.ts";
import { DEFAULT_LIMITS, type Limits, type RuntimeOptions } from "./api.ts";
import { LiveDeltas } from "./liveDeltas.ts";
import type { CallGate } from "../models/callGate.ts";
import { gateOf } from "./flow.ts";
import { RunObserver } from "./runObserver.ts";
import { checkApprovals, checkRecovery, type ApprovalSettings, type Recovery } from "./approvalPolicy.ts";
import { RuntimeError } from "./errors.ts";
import { checkFolder, checkOptionalString, checkOptions, checkPromptsDir, invalid } from "./validate.ts";

export type Configuration = {
  readonly options: RuntimeOptions;
  readonly limits: Limits;
  readonly clock: Clock;
  readonly library: PromptLibrary;
  readonly profiles: Map<string, Profile>;
  readonly mcpServers: McpServers;
  /** Live deltas for subscribers, and spans: the store, the model (in `options.model`) and the tools go through it. */
  readonly deltas: LiveDeltas;
  readonly observer: RunObserver;
  readonly approvals: ApprovalSettings;
  readonly recovery: Recovery;
  /** The concurrency caps, rate limits and 429 pauses every model call waits on. */
  readonly gate: CallGate;
};

/** Checks the options and reads the prompt library and profiles; a bad folder or profile file is a refusal naming the option. */
export const loadConfiguration = (options: RuntimeOptions): Configuration => {
  checkOptions(options, "options");
  if (typeof options.store?.append !== "function")
    throw invalid("store", "an EventStore (openPgliteStore or openPostgresStore)", String(options.store));
  return configurationOf(options);
};

/**
 * The same checks with no store yet, and the root a command will create (its profile and project): what the
 * command line validates before it creates a data dir, so a refusal leaves nothing behind.
 */
export const checkConfiguration = (
  options: Omit<RuntimeOptions, "store">,
  root: { profile?: string; project?: string } = {},
): void => {
  const config = configurationOf(options as RuntimeOptions);
  checkProfileAndProject(config, root.profile?.trim() || PROFILE_DEFAULT, root.project ?? null);
};

/** A root's profile and project must be configured: an unknown project would silently drop its approvals and MCP narrowing. */
export const checkProfileAndProject = (
  config: Pick<Configuration, "options" | "profiles">,
  profile: string,
  project: string | null,
): void => {
  if (!config.profiles.has(profile)) {
    const available = [...config.profiles.keys()].sort().join(", ");
    throw new RuntimeError("invalid", `Agent profile '${profile}' not found. Available profiles: ${available}.`, {
      field: "profile",
      expected: `one of ${available}`,
    });
  }
  const projects = config.options.projects ?? {};
  if (project !== null && !Object.hasOwn(projects, project)) {
    const available = Object.keys(projects).sort().join(", ");
    const expected = available === "" ? "no project (none is configured)" : `one of ${available}`;
    throw new RuntimeError(
      "invalid",
      `Project '${project}' not found. ${available === "" ? "No projects are configured." : `Available projects: ${available}.`}`,
      { field: "project", expected },
    );
  }
};

const configurationOf = (options: RuntimeOptions): Configuration => {
  if (typeof options.model?.call !== "function")
    throw invalid("model", "a ModelPort (openAIModel or scriptedModel)", String(options.model));
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
  if (options.tracerProvider !== undefined && typeof options.tracerProvider?.getTracer !== "function") {
    throw invalid("tracerProvider", "an OpenTelemetry TracerProvider", String(options.tracerProvider));
  }
  const deltas = new LiveDeltas();
  const observer = new RunObserver(actorzeroTracer(options.tracerProvider), deltas);
  const config = {
    // The model every run calls is the observed one: spans, and deltas for live listeners.
    options: { ...options, model: observer.model(options.model) },
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    clock: options.clock ?? systemClock,
    library,
    profiles,
    mcpServers: checkMcp(options),
    approvals: checkApprovals(options),
    recovery: checkRecovery(options.recovery),
    gate: gateOf(options.limits?.maxConcurrentModelCalls, options.presets),
    deltas,
    observer,
  };
  // A remote profile's credentials are redacted wherever their value shows up.
  for (const p of profiles.values()) if (p.remote?.credentialsEnv) markSecretEnv(p.remote.credentialsEnv);
  // Every selection is checked now, so a misspelt server name is a refusal at start rather than a failed run later.
  for (const profile of profiles.keys()) {
    for (const project of [null, ...Object.keys(options.projects ?? {})]) {
      try {
        mcpServersFor(config, profile, project);
      } catch (e) {
        throw invalid(
          project === null ? "profiles" : "projects",
          "MCP server names that mcpServers configures",
          (e as Error).message.replace(/\.$/, ""),
        );
      }
    }
  }
  return config;
};

const checkMcp = (options: RuntimeOptions): McpServers => {
  const deadlines = checkOptions(options.mcp, "mcp");
  for (const key of ["timeoutMs", "connectTimeoutMs"]) {
    const v = deadlines[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) > 0))
      throw invalid(`mcp.${key}`, "a positive whole number of milliseconds", String(v));
  }
  if (options.mcpServers === undefined) return {};
  const parsed = McpServersSchema.safeParse(options.mcpServers);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const expected = 'an MCP server: { type: "stdio", command, args?, env?, cwd? } or { type: "http", url, headers? }';
    throw invalid(["mcpServers", ...issue.path.map(String)].join("."), expected, issue.message);
  }
  // From here on, no text this process stores or prints carries a configured header or environment value.
  addSecrets(mcpSecretValues(parsed.data as McpServers));
  return parsed.data as McpServers;
};

/** The MCP servers a context of `profile` in `project` may use: the profile's selection narrowed by the project's. */
export const mcpServersFor = (
  config: Pick<Configuration, "options" | "profiles" | "mcpServers">,
  profile: string,
  project: string | null,
): string[] =>
  allowedMcpServers({
    configured: Object.keys(config.mcpServers),
    profile: config.profiles.get(profile)?.mcpServers,
    project: project === null ? undefined : config.options.projects?.[project]?.mcpServers,
    owner: `Profile '${profile}'`,
  });

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
  effectiveModel(
    view.modelOverride,
    configuredPresetOf(config, view.profile, view.project),
    config.options.presets ?? {},
  );
