// Which model a run uses: OpenAI (or any compatible endpoint) when a key is set, else the offline demo model.
import type { ModelPort } from "../models/port.ts";
import { DEFAULT_MODEL, presetApiKeys, type Presets } from "../models/presets.ts";
import type { CliConfig } from "./config.ts";
import { DEMO_MODEL_NAME, demoModel } from "./demoModel.ts";

export type ModelFlags = {
  /** True for --offline; a string says why the demo model runs anyway (e.g. the demo task). */
  offline?: boolean | string;
  model?: string;
  "base-url"?: string;
  latency?: number;
};

export type ModelChoice = {
  model: ModelPort;
  presets: Presets;
  offline: boolean;
  /** One line for the screen saying which model runs, and why the demo when it is the demo. The key never appears. */
  banner: string;
};

export const chooseModel = async (
  flags: ModelFlags,
  config: CliConfig,
  env: NodeJS.ProcessEnv,
): Promise<ModelChoice> => {
  const key = env["OPENAI_API_KEY"];
  if (flags.offline || !key) {
    const why =
      typeof flags.offline === "string" ? flags.offline : flags.offline ? "--offline" : "OPENAI_API_KEY is not set";
    return {
      model: demoModel(flags.latency === undefined ? {} : { latencyMs: flags.latency }),
      presets: { Default: { model: DEMO_MODEL_NAME } },
      offline: true,
      banner: `offline demo model (${why}): a scripted model over the real tools, no network.`,
    };
  }
  const configured = config.presets ?? {};
  const base = configured["Default"] ?? { model: DEFAULT_MODEL };
  const Default = {
    ...base,
    ...(flags.model ? { model: flags.model } : {}),
    ...(flags["base-url"] ? { baseURL: flags["base-url"] } : {}),
  };
  const presets = { ...configured, Default };
  const { openAIModel } = await import("../models/openai.ts");
  return {
    model: openAIModel({
      apiKey: key,
      apiKeyFor: presetApiKeys(presets, env),
      ...(flags["base-url"] ? { baseURL: flags["base-url"] } : {}),
    }),
    presets,
    offline: false,
    banner: `model ${Default.model} at ${Default.baseURL ?? flags["base-url"] ?? env["OPENAI_BASE_URL"] ?? "api.openai.com"} (key from OPENAI_API_KEY)`,
  };
};
