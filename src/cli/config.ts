// `actorzero.config.json` in the working directory (DESIGN §7): presets, profile directories, projects, limits, MCP servers.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { Presets, Projects } from "../models/presets.ts";
import { mcpSecretValues, McpServersSchema, type McpServers } from "../tools/mcpConfig.ts";
import { addSecrets } from "../events/redact.ts";
import { ApprovalOptions } from "../tools/approval.ts";
import { CliError } from "./errors.ts";

export const CONFIG_FILE = "actorzero.config.json";

const Limits = z
  .object({
    maxDepth: z.number().int().min(0),
    maxLiveChildrenPerRun: z.number().int().min(1),
    modelRetries: z.number().int().min(0),
    /** Retries after a provider's 429. */
    rateLimitRetries: z.number().int().min(0),
    retryBaseMs: z.number().int().min(0),
    retryMaxMs: z.number().int().min(0),
    passivateAfterMs: z.number().int().min(0),
    /** What a budgeted call reserves for its reply when its preset sets no `maxOutputTokens`. */
    defaultMaxOutputTokens: z.number().int().min(1),
    /** Model calls of the runtime in flight at once; more wait in a queue. */
    maxConcurrentModelCalls: z.number().int().min(1),
  })
  .partial()
  .strict();

export const CliConfig = z
  .object({
    presets: Presets.optional(),
    /** Profile directories, relative to the config file. */
    profiles: z.array(z.string().min(1)).optional(),
    projects: Projects.optional(),
    limits: Limits.optional(),
    /** MCP servers by name (`stdio`: command/args/env/cwd; `http`: url/headers); profiles and projects choose among them. */
    mcpServers: McpServersSchema.optional(),
    /** Tools whose calls wait for a person's decision everywhere, and the decision's time limit. */
    approvals: ApprovalOptions.optional(),
  })
  .strict();
export type CliConfig = z.infer<typeof CliConfig>;

/** The config in `cwd`, or `{}` when there is none; an invalid one names the file, the field and what was expected. */
export const loadConfig = (cwd: string = process.cwd()): CliConfig => {
  const file = path.join(cwd, CONFIG_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new CliError(`cannot read ${CONFIG_FILE}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CliError(`${CONFIG_FILE} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = CliConfig.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "(top level)";
    throw new CliError(`${CONFIG_FILE}: ${field}: ${issue.message}`);
  }
  const config = parsed.data;
  // Every command reads the config first: its MCP credentials are redacted from whatever it prints.
  if (config.mcpServers) addSecrets(mcpSecretValues(config.mcpServers as McpServers));
  return config.profiles ? { ...config, profiles: config.profiles.map((p) => path.resolve(cwd, p)) } : config;
};

/**
 * Marks the config's MCP credentials as secrets before a command parses its arguments, so that even a
 * usage error quoting one redacts it. A config that does not load is left to the commands that read it.
 */
export const noteConfigSecrets = (cwd: string): void => {
  try {
    loadConfig(cwd);
  } catch {
    // Reported by the command that needs the config, with the file and field.
  }
};
