// A tool call's arguments as the model sent them, parsed, with references expanded, and validated by the tool's zod input.
import type { z } from "zod";
import type { Tool } from "./defineTool.ts";
import { expandReferences } from "./references.ts";

const describeIssues = (issues: readonly z.core.$ZodIssue[]): string =>
  issues.map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`).join("; ");

/** A string is the model's JSON; a failure is a message for the model, never a throw. */
export const parseToolArguments = (
  tool: Pick<Tool<unknown>, "name" | "input">,
  raw: unknown,
  resolve: (toolCallId: string) => string | undefined,
): { ok: true; value: unknown } | { ok: false; error: string } => {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = raw.trim() === "" ? {} : JSON.parse(raw);
    } catch (e) {
      return { ok: false, error: `Invalid arguments for '${tool.name}': not valid JSON (${(e as Error).message}).` };
    }
  }
  try {
    value = expandReferences(value, resolve);
  } catch (e) {
    return { ok: false, error: `Invalid arguments for '${tool.name}': ${(e as Error).message}` };
  }
  const parsed = tool.input.safeParse(value);
  if (!parsed.success)
    return { ok: false, error: `Invalid arguments for '${tool.name}': ${describeIssues(parsed.error.issues)}.` };
  return { ok: true, value: parsed.data };
};
