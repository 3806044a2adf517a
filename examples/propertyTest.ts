// "Property-test your agents": your tools and profiles under actorzero's lifecycle invariants, in a few lines.
// Run it: npx tsx examples/propertyTest.ts
import fc from "fast-check";
import { z } from "zod";
import { createRuntime, defineTool, openPgliteStore } from "actorzero";
import {
  assertInvariants, delegate, reply, callTool, scriptByAgent,
  malformedArgumentsArb, LifecycleHarness, lifecycleCommands, lifecycleModel, initialModel, HARNESS_LIMITS,
} from "actorzero/testing";

// Your tool.
const lookup = defineTool({
  name: "lookup",
  description: "Looks a word up.",
  input: z.object({ word: z.string().min(1) }),
  run: ({ word }) => `${word}: a word`,
});

/** What ran: the cases of each property, every one of which held (a failing case throws instead). */
export type PropertyReport = { scripted: number; malformedArguments: number; commandSequences: number };

export async function propertyTestMyAgents({ runs = 20, sequences = 10 } = {}): Promise<PropertyReport> {
  const report: PropertyReport = { scripted: 0, malformedArguments: 0, commandSequences: 0 };
  const store = await openPgliteStore(); // in memory

  // 1. A scripted delegation, then every invariant over the tree.
  const model = scriptByAgent({
    A0: [delegate({ message: "define 'actor'" }), reply("done")],
    A1: [callTool("lookup", { word: "actor" }), reply("actor: a word")],
  });
  const rt = await createRuntime({ store, model, tools: [lookup] });
  const root = await rt.createContext({ name: "example" });
  await rt.send(root.id, "what is an actor?");
  model.assertConsumed();
  await assertInvariants(rt, { rootContextId: root.id });
  report.scripted++;

  // 2. Whatever arguments the model sends your tool, the run goes on and the invariants hold.
  await fc.assert(
    fc.asyncProperty(malformedArgumentsArb, async (args) => {
      const turns = [{ toolCalls: [{ id: "c1", name: "lookup", arguments: args }] }, reply("ok")];
      const rt = await createRuntime({ store, model: scriptByAgent({ A0: turns }), tools: [lookup] });
      const ctx = await rt.createContext();
      const { status } = await rt.send(ctx.id, "look something up");
      await assertInvariants(rt, { rootContextId: ctx.id });
      await rt.close();
      report.malformedArguments++;
      return status === "completed";
    }),
    { numRuns: runs },
  );

  // 3. Random sends, stops, delegations, failures, restarts and crashes, with your tools in the runtime.
  await fc.assert(
    fc.asyncProperty(fc.commands(lifecycleCommands(), { maxCommands: 10 }), async (commands) => {
      const h = await LifecycleHarness.start({ store, runtime: { tools: [lookup] } });
      h.send(0, "start");
      const model = lifecycleModel.send(initialModel(HARNESS_LIMITS), 0);
      await h.settle(model);
      try {
        await fc.asyncModelRun(() => ({ model, real: h }), commands);
        report.commandSequences++;
      } finally {
        await h.close();
      }
    }),
    { numRuns: sequences },
  );
  await store.close();
  return report;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  console.log("property-testing the lookup tool under the lifecycle invariants…");
  const r = await propertyTestMyAgents();
  console.log(`${r.scripted} scripted delegation, ${r.malformedArguments} malformed-argument cases, ` +
    `${r.commandSequences} random command sequences: every property held (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}
