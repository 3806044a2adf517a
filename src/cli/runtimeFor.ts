// The runtime a command drives: the config file's profiles, projects, limits and MCP servers, with the chosen model.
import type { EventStore } from "../events/store.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { CliConfig } from "./config.ts";
import type { ModelChoice } from "./modelChoice.ts";

/**
 * The runtime (loaded on demand: only the commands that drive runs need it). `recovery`: what it does with runs
 * a killed process left unfinished (`--recovery` of run, send and serve); the commands that only stop, pause
 * or fork record them as interrupted, as their offline model must not carry them on.
 */
/** The runtime's options for a command's config and model choice. */
const optionsFor = (config: CliConfig, choice: ModelChoice) => ({
  model: choice.model,
  presets: choice.presets,
  ...(config.projects ? { projects: config.projects } : {}),
  ...(config.profiles ? { profiles: config.profiles } : {}),
  ...(config.limits ? { limits: config.limits } : {}),
  ...(config.mcpServers ? { mcpServers: config.mcpServers } : {}),
  ...(config.approvals ? { approvals: config.approvals } : {}),
});

/**
 * Everything the runtime would refuse at open (profile files, MCP selections, approvals) and the root's
 * profile, checked before the store is opened: a refused `run` or `serve` leaves no data dir behind.
 */
export const checkRuntimeFor = async (
  config: CliConfig,
  choice: ModelChoice,
  root: { profile?: string } = {},
): Promise<void> => {
  const { checkConfiguration } = await import("../runtime/configuration.ts");
  checkConfiguration(optionsFor(config, choice), root);
};

export const runtimeFor = async (
  store: EventStore,
  config: CliConfig,
  choice: ModelChoice,
  recovery: "resume" | "interrupt" = "interrupt",
): Promise<Runtime> => {
  const { createRuntime } = await import("../runtime/runtime.ts");
  return createRuntime({ store, ...optionsFor(config, choice), recovery });
};
