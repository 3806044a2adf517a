// Agent profiles: `prompts/profiles/<key>/profile.json` plus prompt files that override the base ones file by file (DESIGN §7).
import { readdirSync, readFileSync, existsSync, statSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ApprovalList, McpSelection } from "../models/presets.ts";
import { BudgetLimits } from "../events/schema.ts";

export const PROFILE_DEFAULT = "default";

/** The environment variable names a remote profile may name for its credentials (never the credentials themselves). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A profile that stands for another A2A agent: `call_subordinate` to it sends the message as an A2A task to the agent
 * whose card is at `<url>/.well-known/agent-card.json` (the skill `skill` names, the agent's default otherwise), with
 * `Authorization: Bearer <the value of $credentialsEnv>` when that is set. The URL may carry no credentials itself.
 */
export const RemoteAgent = z
  .object({
    url: z
      .string()
      .refine((u) => URL.canParse(u) && ["http:", "https:"].includes(new URL(u).protocol), "an http(s) URL")
      .refine(
        (u) => !URL.canParse(u) || (new URL(u).username === "" && new URL(u).password === ""),
        "no credentials in the URL: name an environment variable in credentialsEnv",
      )
      .refine((u) => !URL.canParse(u) || (new URL(u).search === "" && new URL(u).hash === ""), "no query or fragment"),
    skill: z.string().min(1).optional(),
    credentialsEnv: z.string().regex(ENV_NAME, "the name of an environment variable (letters, digits, _)").optional(),
  })
  .strict();
export type RemoteAgent = z.infer<typeof RemoteAgent>;

/** Strict: a misspelt key (`needsAproval`) would otherwise be dropped without a word, and its rule with it. */
export const ProfileFile = z
  .strictObject({
    title: z.string().min(1),
    description: z.string().default(""),
    context: z.string().default(""),
    enabled: z.boolean().default(true),
    modelPreset: z.string().optional(),
    /** The configured MCP servers this profile's agents may use: a list of names or "*" (the default: all of them). */
    mcpServers: McpSelection.optional(),
    /** Tools whose calls wait for a person's decision when this profile's agents make them (names, or `prefix*`). */
    needsApproval: ApprovalList.optional(),
    /** The budget of a tree whose root has this profile, when `createContext` gives none and its project has none. */
    budget: BudgetLimits.optional(),
    /** A remote A2A agent this profile stands for: its subordinates run there, not here. */
    remote: RemoteAgent.optional(),
  })
  .superRefine((p, ctx) => {
    // A remote agent runs with its own model, tools and approvals: these would silently do nothing.
    if (!p.remote) return;
    for (const key of ["modelPreset", "mcpServers", "needsApproval", "budget"] as const) {
      if (p[key] !== undefined)
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: "does not apply to a remote profile (the remote agent has its own)",
        });
    }
  });

export type Profile = z.infer<typeof ProfileFile> & {
  key: string;
  /** Prompt files of this profile that replace base files of the same name. */
  prompts: Record<string, string>;
};

/** The bundled `prompts/` folder of this package. */
export const BUNDLED_PROMPTS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "prompts");

export class ConfigError extends Error {
  readonly _tag = "ConfigError" as const;
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const readPromptFiles = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dir).sort()) {
    if (f.endsWith(".md")) out[f] = readFileSync(join(dir, f), "utf8");
  }
  return out;
};

/** Loads every profile under each `profiles` directory; a later directory's profile replaces an earlier one of the same key. */
export const loadProfiles = (dirs: readonly string[]): Map<string, Profile> => {
  const profiles = new Map<string, Profile>();
  for (const dir of dirs) {
    if (!existsSync(dir)) throw new ConfigError(`Profile directory '${dir}' does not exist.`);
    for (const key of readdirSync(dir).sort()) {
      const pdir = join(dir, key);
      if (!statSync(pdir).isDirectory()) continue;
      const file = join(pdir, "profile.json");
      if (!existsSync(file)) continue;
      let json: unknown;
      try {
        json = JSON.parse(readFileSync(file, "utf8"));
      } catch (e) {
        throw new ConfigError(`${file}: not valid JSON (${(e as Error).message}).`);
      }
      const parsed = ProfileFile.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        if (issue.code === "unrecognized_keys") {
          const known = Object.keys(ProfileFile.shape).join(", ");
          const keys = issue.keys.map((k) => `'${k}'`).join(", ");
          // A key misspelt inside a field (`budget.modelcalls`) names that field.
          throw new ConfigError(
            issue.path.length === 0
              ? `${file}: unknown key ${keys} (a profile.json has only ${known}).`
              : `${file}: field '${issue.path.join(".")}': unknown key ${keys}.`,
          );
        }
        throw new ConfigError(`${file}: field '${issue.path.join(".") || "(root)"}': ${issue.message}.`);
      }
      profiles.set(key, { ...parsed.data, key, prompts: readPromptFiles(pdir) });
    }
  }
  if (!profiles.has(PROFILE_DEFAULT)) {
    profiles.set(PROFILE_DEFAULT, {
      key: PROFILE_DEFAULT,
      title: "Default",
      description: "",
      context: "",
      enabled: true,
      prompts: {},
    });
  }
  return profiles;
};

/** Base prompt files and tool descriptions, read once. */
export type PromptLibrary = { system: Record<string, string>; tools: Record<string, string> };

export const loadPromptLibrary = (promptsDir: string = BUNDLED_PROMPTS_DIR): PromptLibrary => ({
  system: readPromptFiles(join(promptsDir, "system")),
  tools: readPromptFiles(join(promptsDir, "tools")),
});

const fill = (template: string, vars: Record<string, string>): string =>
  template.replace(/\{\{(\w+)\}\}/g, (m, k: string) => vars[k] ?? m);

/** The system prompt of a context: base files, each replaced by the profile's file of the same name. */
export const systemPrompt = (
  library: PromptLibrary,
  profile: Profile | undefined,
  vars: { agentNumber: number; superior: string },
): string => {
  const files = { ...library.system };
  for (const [name, text] of Object.entries(profile?.prompts ?? {})) files[name] = text;
  const values = { agent_number: String(vars.agentNumber), superior: vars.superior };
  return Object.keys(files)
    .sort()
    .map((f) => fill(files[f]!, values).trim())
    .join("\n\n");
};

/** "key (Title)" when the title differs from the key, sorted; "none" when empty. */
export const describeProfileKeys = (keys: readonly string[], profiles: ReadonlyMap<string, Profile>): string => {
  const sorted = [...keys].sort();
  if (sorted.length === 0) return "none";
  return sorted
    .map((k) => {
      const title = profiles.get(k)?.title;
      return title && title !== k ? `${k} (${title})` : k;
    })
    .join(", ");
};

export const toolDescription = (
  library: PromptLibrary,
  name: string,
  vars: Record<string, string> = {},
): string | undefined => {
  const text = library.tools[`${name}.md`];
  return text === undefined ? undefined : fill(text, vars).trim();
};
