// A worker process of bench/capacity.bench.ts: runs the capacity load on a PostgreSQL log and prints its result.
//   node --import tsx bench/support/capacityWorker.ts <url> <conversations> <rounds> <latencyMs>
import readline from "node:readline";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { runLoad } from "./capacityLoad.ts";

const [url, n, rounds, latency] = process.argv.slice(2);
if (!url || !n || !rounds || !latency)
  throw new Error("usage: capacityWorker.ts <url> <conversations> <rounds> <latencyMs>");
const store = await openPostgresStore({ url });
const lines = readline.createInterface({ input: process.stdin });
console.log("ready");
for await (const line of lines) if (line === "go") break;
lines.close();
try {
  const result = await runLoad(store, Number(n), Number(rounds), Number(latency));
  console.log(JSON.stringify({ ...result, maxRssKb: process.resourceUsage().maxRSS }));
} finally {
  await store.close();
}
