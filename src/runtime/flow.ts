// The runtime's call gate, built from `limits.maxConcurrentModelCalls` and the presets' flow settings.
//
// Requirements:
// - `limits.maxConcurrentModelCalls` and a preset's `maxConcurrent`, `requestsPerMinute`, `tokensPerMinute` and
//   `rateWindowMs` are whole numbers ≥ 1; a bad one is a RuntimeError naming it, before the log is touched.
// - Every runtime has a gate, even with nothing configured: a provider's 429 pauses it for every caller.
import { CallGate, type ProviderLimits } from "../models/callGate.ts";
import type { ChatMessage } from "../models/messages.ts";
import type { ToolSpec } from "../models/port.ts";
import type { EffectiveModel, Presets } from "../models/presets.ts";
import { tokenCounterFor } from "../models/tokenCount.ts";
import type { GateEnv } from "../actors/callQueue.ts";
import { invalid } from "./validate.ts";

const positive = (field: string, v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) throw invalid(field, "a whole number ≥ 1", String(v));
  return v;
};

const FLOW_KEYS = ["maxConcurrent", "requestsPerMinute", "tokensPerMinute", "rateWindowMs"] as const;

/** The gate for these limits and presets. */
export const gateOf = (maxConcurrentModelCalls: unknown, presets: Presets | undefined): CallGate => {
  const providers: Record<string, ProviderLimits> = {};
  for (const [name, preset] of Object.entries(presets ?? {})) {
    const limits: ProviderLimits = {};
    for (const key of FLOW_KEYS) {
      const v = positive(`presets.${name}.${key}`, (preset as Record<string, unknown> | undefined)?.[key]);
      if (v !== undefined) limits[key] = v;
    }
    providers[name] = limits;
  }
  return new CallGate({
    maxConcurrent: positive("limits.maxConcurrentModelCalls", maxConcurrentModelCalls),
    providers,
  });
};

/** What a run's loop needs of the gate: its preset, and how to count a request's tokens when the preset limits them. */
export const gateEnvOf = (
  gate: CallGate,
  model: EffectiveModel,
  messages: () => ChatMessage[],
  tools: readonly ToolSpec[],
): GateEnv =>
  gate.countsTokens(model.presetName)
    ? {
        gate,
        preset: model.presetName,
        tokens: async () => (await tokenCounterFor(model.model)).request({ messages: messages(), tools: [...tools] }),
      }
    : { gate, preset: model.presetName };
