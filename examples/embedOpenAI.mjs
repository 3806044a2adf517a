// Embedding actorzero with an OpenAI-compatible model, a tool of your own, and the log on disk.
// Run it: OPENAI_API_KEY=... node embedOpenAI.mjs   (without a key the run fails and says why)
import { createRuntime, openPgliteStore, openAIModel, defineTool } from "actorzero";
import { z } from "zod";

const store = await openPgliteStore({ dataDir: "./.actorzero" }); // in memory without a dataDir
const clock = defineTool({
  name: "clock",
  description: "The current time, ISO 8601.",
  input: z.object({}),
  run: () => new Date().toISOString(),
});
const rt = await createRuntime({
  store,
  model: openAIModel({ apiKey: process.env.OPENAI_API_KEY, model: "gpt-4o-mini" }),
  tools: [clock],
  limits: { maxDepth: 3, maxLiveChildrenPerRun: 4 },
});
const ctx = await rt.createContext({ name: "planner", profile: "researcher" }); // a root, A0
const { status, response, failure } = await rt.send(ctx.id, "Plan a three-day trip; delegate the research.");
if (status === "completed") console.log(response);
else console.log(`${status}: ${failure?.reason} (${failure?.message})`);
const { rollup } = await rt.usage(ctx.id);
const subordinates = (await rt.children(ctx.id)).length;
console.log(`${subordinates} subordinate${subordinates === 1 ? "" : "s"}, ${rollup?.inputTokens ?? 0} tokens in / ${rollup?.outputTokens ?? 0} out`);
await rt.close();
await store.close();
