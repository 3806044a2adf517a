// One footprint scenario in its own process: `node bench/footprintChild.mjs memory | new <dir> | reopen <dir> | long <runs> <dir>`.
//
// It loads the library as an embedder does: the package entry (`actorzero`, i.e. the built dist/),
// run by plain node. Plain JavaScript, as an embedder's entry is: a TypeScript entry would make node
// load its type stripper first (~45 ms more per start, which is this file's cost, not the library's).
// With FOOTPRINT_FROM=source it loads src/ instead, for a run under tsx (how a clone's `npm start`
// and tests run).
// Prints one JSON line {ms, maxRssMb}: wall time since this process started, and its peak RSS.
// `long` runs that many messages one after another on a data dir, with a model that keeps nothing (a
// recording test model would be the growth measured), all to one context, and adds rssAfterTenthMb / rssAtEndMb and
// heapAfterTenthMb / heapAtEndMb: RSS and V8's used heap after a tenth of the runs, and after all.

/** @type {Pick<typeof import("../src/index.ts"), "openPgliteStore" | "createRuntime">} */
const lib = process.env["FOOTPRINT_FROM"] === "source" ? await import("../src/index.ts") : await import("actorzero");

const [scenario, arg, arg2] = process.argv.slice(2);
const usage = "usage: footprintChild.mjs memory | new <dataDir> | reopen <dataDir> | long <runs> <dataDir>";
if (scenario === undefined || !["memory", "new", "reopen", "long"].includes(scenario)) throw new Error(usage);
const dataDir = scenario === "long" ? arg2 : arg;
if (scenario !== "memory" && dataDir === undefined) throw new Error(usage);

const store = await lib.openPgliteStore(dataDir === undefined ? {} : { dataDir });
/** @type {import("../src/models/port.ts").ModelPort} */
const model = { call: async () => ({ text: "done", usage: { inputTokens: 1, outputTokens: 1 } }) };
const rt = await lib.createRuntime({ store, model, tools: [] });
const runs = scenario === "long" ? Number(arg) : 1;
// With --expose-gc (the bench passes it for `long`), RSS is read after a full collection: garbage not
// yet collected is the collector's pacing, not growth (3,000 runs read 1.15x without it).
const gc = /** @type {{ gc?: () => void }} */ (globalThis).gc;
const mb = () => {
  gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss: rss / 1024 / 1024, heap: heapUsed / 1024 / 1024 };
};
let tenth = { rss: 0, heap: 0 };
const root = await rt.createContext({ name: "footprint" });
for (let i = 1; i <= runs; i++) {
  await rt.send(root.id, `run ${i}`);
  if (i === Math.ceil(runs / 10)) tenth = mb();
}
const end = mb();
await rt.close();
await store.close();
const long =
  scenario === "long"
    ? { rssAfterTenthMb: tenth.rss, rssAtEndMb: end.rss, heapAfterTenthMb: tenth.heap, heapAtEndMb: end.heap }
    : {};
console.log(JSON.stringify({ ms: performance.now(), maxRssMb: process.resourceUsage().maxRSS / 1024, ...long }));
