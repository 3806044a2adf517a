// fast-check arbitrary for a context's model override: a preset name, or a raw model (with a base URL, sometimes).
import fc from "fast-check";
import type { ModelOverride } from "../events/schema.ts";

export const modelOverrideArb: fc.Arbitrary<ModelOverride> = fc.oneof(
  fc.record({ preset: fc.constantFrom("Default", "fast", "smart") }),
  fc.record(
    { model: fc.constantFrom("gpt-4o-mini", "llama3"), baseURL: fc.constantFrom("http://localhost:1234/v1") },
    { requiredKeys: ["model"] },
  ),
);
