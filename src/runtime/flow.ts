// The runtime's call gate, built from `limits.maxConcurrentModelCalls` and the presets' `maxConcurrent`.
//
// Requirements:
// - Each setting is a whole number ≥ 1; a bad one is a RuntimeError naming it, before the log is touched.
// - With none set there is no gate: model calls go straight to the port, as before.
import { callGate, type CallGate, type ProviderLimits } from "../models/callGate.ts";
import type { Presets } from "../models/presets.ts";
import { invalid } from "./validate.ts";

const positive = (field: string, v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) throw invalid(field, "a whole number ≥ 1", String(v));
  return v;
};

/** The gate for these limits and presets, or null when they set no cap. */
export const gateOf = (maxConcurrentModelCalls: unknown, presets: Presets | undefined): CallGate | null => {
  const providers: Record<string, ProviderLimits> = {};
  for (const [name, preset] of Object.entries(presets ?? {})) {
    const maxConcurrent = positive(`presets.${name}.maxConcurrent`, preset?.maxConcurrent);
    if (maxConcurrent !== undefined) providers[name] = { maxConcurrent };
  }
  return callGate({ maxConcurrent: positive("limits.maxConcurrentModelCalls", maxConcurrentModelCalls), providers });
};
