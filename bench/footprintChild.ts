// One footprint scenario in its own process: `tsx bench/footprintChild.ts memory|new|reopen [dataDir]`,
// or `long <runs>`: that many sequential runs on one in-memory store.
// Prints one JSON line {ms, maxRssMb}: wall time since this process started, and its peak RSS
// (`long` adds rssAfterTenthMb and rssAtEndMb: RSS after a tenth of the runs, and after all of them).
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { scriptedModel } from "../src/models/scripted.ts";
import { createRuntime } from "../src/runtime/runtime.ts";

const [scenario, dataDir] = process.argv.slice(2);
if (scenario !== "memory" && scenario !== "long" && (dataDir === undefined || (scenario !== "new" && scenario !== "reopen"))) {
  throw new Error("usage: footprintChild.ts memory | new <dataDir> | reopen <dataDir>");
}
const store = await openPgliteStore(scenario === "memory" || scenario === "long" ? {} : { dataDir: dataDir! });
const model = scriptedModel(() => ({ text: "done", usage: { inputTokens: 1, outputTokens: 1 } }));
const rt = await createRuntime({ store, model, tools: [] });
const root = await rt.createContext({ name: "footprint" });
const runs = scenario === "long" ? Number(dataDir ?? 10_000) : 1;
const mb = () => process.memoryUsage().rss / 1024 / 1024;
let rssAfterTenthMb = 0;
for (let i = 1; i <= runs; i++) {
  await rt.send(root.id, `run ${i}`);
  if (i === Math.ceil(runs / 10)) rssAfterTenthMb = mb();
}
const rssAtEndMb = mb();
await rt.close();
await store.close();
const long = scenario === "long" ? { rssAfterTenthMb, rssAtEndMb } : {};
console.log(JSON.stringify({ ms: performance.now(), maxRssMb: process.resourceUsage().maxRSS / 1024, ...long }));
