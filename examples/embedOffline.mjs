// Embedding actorzero with no API key: a scripted model delegates once (A0 -> A1) on an in-memory log.
// Run it: node embedOffline.mjs
import { createRuntime, openPgliteStore, scriptedTurns } from "actorzero";

const store = await openPgliteStore(); // in memory; openPgliteStore({ dataDir: "./.actorzero" }) keeps the log on disk
const model = scriptedTurns([
  // A0 delegates the research to a subordinate, A1 ...
  { toolCalls: [{ name: "call_subordinate", arguments: JSON.stringify({ message: "Name one sight in Lisbon." }) }] },
  { text: "The Belém Tower." }, // ... A1 answers ...
  { text: "Day one: the Belém Tower, then pastries nearby." }, // ... and A0 composes the final answer.
]);
const rt = await createRuntime({ store, model });
const root = await rt.createContext({ name: "planner" });
const { status, response } = await rt.send(root.id, "Plan a day in Lisbon; delegate the research.");
console.log(`A0 ${status}: ${response}`);
for (const child of await rt.children(root.id)) {
  const [, answer] = (await rt.history(child.id)).filter((m) => m.role !== "system");
  console.log(`  A${child.agentNumber} "${child.name}" ${child.status}: ${answer?.content}`);
}
const { rollup } = await rt.usage(root.id);
console.log(`${rollup?.contexts} contexts, ${rollup?.modelCalls} model calls`);
await rt.close();
await store.close();
