// Model presets and projects: which preset a context is configured with, and which model it effectively uses (DESIGN §7).
import { z } from "zod";
import { BudgetLimits, type ModelOverride } from "../events/schema.ts";

export const DEFAULT_PRESET = "Default";
/** The model of the `Default` preset when the configuration names none. */
export const DEFAULT_MODEL = "gpt-4o-mini";

/** A named model configuration. `apiKeyEnv` names the environment variable holding its key; the key itself is never stored. */
export const Preset = z
  .object({
    model: z.string().min(1),
    baseURL: z.url().optional(),
    apiKeyEnv: z.string().min(1).optional(),
    /** The model's context window in tokens; without it the history is sent whole, as before. */
    contextWindow: z.int().positive().optional(),
    /** The most tokens a reply may have: reserved in the window and in a budget before each call. */
    maxOutputTokens: z.int().positive().optional(),
    /** Compact the history before a call whose request would pass this share of the window (default 0.8). */
    compactAt: z.number().gt(0).lte(1).optional(),
    /** US dollars per million input and output tokens, for budgets in `costUsd`. */
    price: z
      .object({ inputPerMTok: z.number().nonnegative(), outputPerMTok: z.number().nonnegative() })
      .strict()
      .optional(),
    /** At most this many calls to this preset's provider at once; more wait in a FIFO queue. */
    maxConcurrent: z.int().positive().optional(),
    /** The provider's rate limits, shared by every context of the runtime. */
    requestsPerMinute: z.int().positive().optional(),
    tokensPerMinute: z.int().positive().optional(),
    /**
     * The window the provider counts those limits over (default 60,000 ms); the limits are scaled to it, so a
     * provider that enforces 600 a minute as 10 a second takes `{ requestsPerMinute: 600, rateWindowMs: 1000 }`.
     */
    rateWindowMs: z.int().positive().optional(),
  })
  .strict();
export type Preset = z.infer<typeof Preset>;

/** A reply's reserved room when a preset with a window sets no `maxOutputTokens`: a quarter of the window, at most 4,096. */
export const DEFAULT_OUTPUT_SHARE = 0.25;
export const DEFAULT_MAX_OUTPUT = 4096;
/** `compactAt` when a preset with a window sets none. */
export const DEFAULT_COMPACT_AT = 0.8;

/** The window settings of a preset, or null when it sets no `contextWindow` (the history is then sent whole). */
export const windowSettings = (
  preset: Preset | undefined,
): { contextWindow: number; maxOutputTokens: number; compactAt: number } | null =>
  preset?.contextWindow === undefined
    ? null
    : {
        contextWindow: preset.contextWindow,
        maxOutputTokens:
          preset.maxOutputTokens ??
          Math.min(DEFAULT_MAX_OUTPUT, Math.floor(preset.contextWindow * DEFAULT_OUTPUT_SHARE)),
        compactAt: preset.compactAt ?? DEFAULT_COMPACT_AT,
      };

/** Presets by name, as configured; `presetTable` adds `Default` when it is missing. */
export const Presets = z.record(z.string().min(1), Preset);
export type Presets = z.infer<typeof Presets>;

/** A preset table in which `Default` always exists. */
export type PresetTable = Readonly<Record<string, Preset>> & { readonly Default: Preset };

/** Which configured MCP servers are allowed: every one (`"*"`) or these by name. */
export const McpSelection = z.union([z.literal("*"), z.array(z.string().min(1))]);

/** Tools whose calls wait for a person's decision: exact names, or a prefix ending in `*` (`github__*` for an MCP server's). */
export const ApprovalList = z.array(
  z
    .string()
    .min(1)
    .regex(/^[^*]*\*?$/, "a tool name, or a prefix ending in *"),
);

/**
 * A project: the profiles it disables, the presets it chooses (for itself and per profile), the MCP
 * servers it allows, the tools whose calls need approval in it (beside the profile's and the runtime's).
 */
export const ProjectConfig = z
  .object({
    disabledProfiles: z.array(z.string().min(1)).optional(),
    preset: z.string().optional(),
    profilePresets: z.record(z.string().min(1), z.string()).optional(),
    mcpServers: McpSelection.optional(),
    needsApproval: ApprovalList.optional(),
    /** The budget of a tree whose root is in this project, when `createContext` gives none. */
    budget: BudgetLimits.optional(),
  })
  .strict();
export type ProjectConfig = z.infer<typeof ProjectConfig>;

export const Projects = z.record(z.string().min(1), ProjectConfig);
export type Projects = z.infer<typeof Projects>;

/** The configured presets with `Default` guaranteed (`{ model: DEFAULT_MODEL }` unless configured). */
export const presetTable = (presets: Presets = {}): PresetTable => ({
  [DEFAULT_PRESET]: { model: DEFAULT_MODEL },
  ...presets,
});

const isKnown = (presets: Presets, name: string): boolean => Object.hasOwn(presets, name);

/** An empty setting is no setting: it lets the next level decide. */
const setting = (name: string | null | undefined): string | undefined => (name ? name : undefined);

export type ConfiguredPresetInput = {
  presets: Presets;
  projects: Projects;
  /** The profile's own `modelPreset`, if it has one. */
  profileModelPreset?: string | null | undefined;
  project?: string | null | undefined;
  profile: string;
};

/**
 * The context's configured preset name: the project+profile setting, else the project's, else the
 * profile's, else `Default`. The first setting found decides: when it names no known preset, the
 * result is `Default` (it does not fall through to the next level).
 */
export function configuredPreset(input: ConfiguredPresetInput): string {
  const project = input.project ? input.projects[input.project] : undefined;
  const chosen =
    setting(project?.profilePresets?.[input.profile]) ?? setting(project?.preset) ?? setting(input.profileModelPreset);
  return chosen !== undefined && isKnown(input.presets, chosen) ? chosen : DEFAULT_PRESET;
}

export type EffectiveModel = {
  model: string;
  baseURL?: string;
  /** The preset used, or null for a raw `{ model, baseURL? }` override. */
  presetName: string | null;
};

/**
 * The model a context calls: its override when it has one (a `{ preset }` naming no known preset
 * counts as `Default`; a raw `{ model, baseURL? }` is used as is), else its configured preset.
 */
export function effectiveModel(
  override: ModelOverride | null | undefined,
  configuredPresetName: string,
  presets: Presets,
): EffectiveModel {
  if (override && "model" in override) {
    return { model: override.model, ...(override.baseURL ? { baseURL: override.baseURL } : {}), presetName: null };
  }
  const table = presetTable(presets);
  const wanted = override ? override.preset : configuredPresetName;
  const presetName = isKnown(table, wanted) ? wanted : DEFAULT_PRESET;
  const preset = table[presetName] ?? table.Default;
  return { model: preset.model, ...(preset.baseURL ? { baseURL: preset.baseURL } : {}), presetName };
}

/**
 * The API key for an endpoint, read from the `apiKeyEnv` of the first preset with that `baseURL`;
 * pass it to `openAIModel({ apiKeyFor })` so keys stay in the environment and out of requests and the log.
 */
export const presetApiKeys =
  (presets: Presets, env: Readonly<Record<string, string | undefined>> = process.env) =>
  (baseURL: string): string | undefined => {
    const preset = Object.values(presets).find((p) => p.baseURL === baseURL && p.apiKeyEnv);
    return preset?.apiKeyEnv ? env[preset.apiKeyEnv] : undefined;
  };
