// Checks of what embedders hand the runtime: a refusal names the field and what was expected, before anything is written.
//
// Requirements:
// - Names, profiles, projects and messages must be strings; ids must be non-empty strings without control
//   characters (PostgreSQL text cannot hold NUL) and of a sane length; positions and limits whole numbers.
// - Prompt folders and profile folders must exist and be folders.
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { RuntimeError } from "./errors.ts";

const MAX_ID_LENGTH = 200;
// Control characters (C0, DEL, C1): an id is printed, logged and stored as text; none belongs in one.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const kindOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v);

export const invalid = (field: string, expected: string, got: string): RuntimeError =>
  new RuntimeError("invalid", `${field}: expected ${expected}, got ${got}.`, { field, expected });

export const checkId = (field: string, v: unknown): string => {
  if (typeof v !== "string") throw invalid(field, "a context id (a string)", kindOf(v));
  if (v.length === 0) throw invalid(field, "a context id (a non-empty string)", "an empty string");
  if (v.length > MAX_ID_LENGTH)
    throw invalid(field, `a context id of at most ${MAX_ID_LENGTH} characters`, `${v.length}`);
  if (CONTROL.test(v)) throw invalid(field, "a context id without control characters", "a string containing one");
  return v;
};

export const checkOptionalString = (field: string, v: unknown): string | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw invalid(field, "a string", kindOf(v));
  if (v.includes("\u0000")) throw invalid(field, "a string without NUL characters", "a string containing one");
  return v;
};

export const checkMessage = (v: unknown): string => {
  if (typeof v !== "string") throw invalid("text", "a non-empty string", kindOf(v));
  if (v.trim() === "") throw invalid("text", "a non-empty string", "an empty one");
  return v;
};

export const checkPosition = (field: string, v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw invalid(field, "a whole number ≥ 0", String(v));
  return v;
};

export const checkLimit = (v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1)
    throw invalid("limit", "a whole number ≥ 1", String(v));
  return v;
};

export const checkOptions = (v: unknown, field: string): Record<string, unknown> => {
  if (v === undefined) return {};
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalid(field, "an object", kindOf(v));
  return v as Record<string, unknown>;
};

/** A folder the runtime reads at start: it must exist and be a folder. */
export const checkFolder = (field: string, dir: unknown): string => {
  if (typeof dir !== "string" || dir === "") throw invalid(field, "a folder path (a string)", kindOf(dir));
  if (!existsSync(dir)) throw invalid(field, "an existing folder", `'${dir}', which does not exist`);
  if (!statSync(dir).isDirectory()) throw invalid(field, "a folder", `'${dir}', which is not one`);
  return dir;
};

/** A prompts folder holds system/, tools/ and profiles/. */
export const checkPromptsDir = (dir: unknown): string => {
  const root = checkFolder("promptsDir", dir);
  for (const sub of ["system", "tools", "profiles"]) checkFolder(`promptsDir (${sub}/)`, join(root, sub));
  return root;
};
