// The README's "Property-test your agents" example, run as it is written (examples/propertyTest.ts).
import { describe, expect, it } from "vitest";
import { propertyTestMyAgents } from "../../examples/propertyTest.ts";

describe("the README's property-test example", () => {
  it("runs to the end: a scripted delegation, malformed arguments to a user's tool, and random command sequences all keep the invariants", async () => {
    const report = await propertyTestMyAgents({ runs: 15, sequences: 8 });
    expect(report).toEqual({ scripted: 1, malformedArguments: 15, commandSequences: 8 });
  }, 300_000);
});
