// The approval settings of a runtime, checked at start: which tool calls wait for a decision, for how long,
// and what happens at open to runs a gone process left unfinished (`recovery`).
//
// Requirements:
// - `approvals` (tools, timeoutMs), each project's `needsApproval`, and every own tool's `needsApproval` /
//   `idempotent` are checked with zod (or by kind) before the log is touched: a bad one is a RuntimeError
//   naming the field.
// - A context's list is the runtime's, its profile's and its project's together: configuration only adds.
import { ApprovalList } from "../models/presets.ts";
import type { Profile } from "../profiles/profiles.ts";
import { ApprovalOptions } from "../tools/approval.ts";
import type { RuntimeOptions } from "./api.ts";
import { invalid } from "./validate.ts";

export type ApprovalSettings = {
  /** Tools needing approval in every context (the runtime's own list). */
  readonly tools: readonly string[];
  /** Milliseconds before a pending approval is denied as "timed out"; null for never. */
  readonly timeoutMs: number | null;
};

const issueOf = (
  field: string,
  error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] },
  expected: string,
) => {
  const issue = error.issues[0]!;
  return invalid([field, ...issue.path.map(String)].join("."), expected, issue.message);
};

/** Checks `options.approvals`, the projects' `needsApproval` and the own tools' approval fields. */
export const checkApprovals = (options: RuntimeOptions): ApprovalSettings => {
  const parsed = ApprovalOptions.safeParse(options.approvals ?? {});
  if (!parsed.success) {
    throw issueOf(
      "approvals",
      parsed.error,
      "{ tools?: tool names or prefixes ending in *, timeoutMs?: a positive whole number of milliseconds }",
    );
  }
  for (const [name, project] of Object.entries(options.projects ?? {})) {
    const list = ApprovalList.optional().safeParse(project?.needsApproval);
    if (!list.success)
      throw issueOf(`projects.${name}.needsApproval`, list.error, "tool names or prefixes ending in *");
  }
  (options.tools ?? []).forEach((tool, i) => {
    const needs: unknown = tool?.needsApproval;
    if (needs !== undefined && typeof needs !== "boolean" && typeof needs !== "function") {
      throw invalid(`tools[${i}].needsApproval`, "true, false or a function (input, ctx) => boolean", typeof needs);
    }
    const idempotent: unknown = tool?.idempotent;
    if (idempotent !== undefined && typeof idempotent !== "boolean")
      throw invalid(`tools[${i}].idempotent`, "true or false", typeof idempotent);
  });
  return { tools: parsed.data.tools ?? [], timeoutMs: parsed.data.timeoutMs ?? null };
};

/** The tools whose calls need approval in a context of `profile` in `project`: the runtime's, the profile's and the project's lists. */
export const approvalListFor = (
  settings: ApprovalSettings,
  profiles: ReadonlyMap<string, Profile>,
  projects: RuntimeOptions["projects"],
  profile: string,
  project: string | null,
): string[] => [
  ...settings.tools,
  ...(profiles.get(profile)?.needsApproval ?? []),
  ...(project === null ? [] : (projects?.[project]?.needsApproval ?? [])),
];

/**
 * What happens at open to a run whose process is gone: `"resume"` (the default) goes on from its last
 * recorded step; `"interrupt"` records it as interrupted.
 */
export type Recovery = "resume" | "interrupt";

export const checkRecovery = (v: unknown): Recovery => {
  if (v === undefined || v === "resume") return "resume";
  if (v === "interrupt") return "interrupt";
  throw invalid("recovery", '"resume" or "interrupt"', typeof v === "string" ? `"${v}"` : typeof v);
};
