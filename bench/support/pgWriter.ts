// A writer process for bench/postgres.bench.ts: opens the store, says "ready", appends single events
// to streams of its own from "go" until its time is up, then prints how many it appended.
//   node --import tsx bench/support/pgWriter.ts <url> <durationMs> <writerId>
import readline from "node:readline";
import { asRunId } from "../../src/events/ids.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";

const [url, durationArg, writerId] = process.argv.slice(2);
if (!url || !durationArg || !writerId) throw new Error("usage: pgWriter.ts <url> <durationMs> <writerId>");
const durationMs = Number(durationArg);

const event: NewEvent = {
  type: "MessageReceived",
  data: {
    runId: asRunId("run-1"),
    text: "Summarise the findings of the last three runs in two lines.",
    sender: "user",
  },
  metadata: { correlationId: "run-1", causationId: null, actor: "bench" },
};

const store = await openPostgresStore({ url, poolSize: 2 });
const lines = readline.createInterface({ input: process.stdin });
console.log("ready");
for await (const line of lines) if (line === "go") break;
lines.close();
const versions = new Map<string, number>();
const deadline = performance.now() + durationMs;
let appended = 0;
while (performance.now() < deadline) {
  const streamId = `w${writerId}-${appended % 20}`;
  const version = versions.get(streamId) ?? 0;
  await store.append(streamId, [event], { expectedVersion: version === 0 ? "no_stream" : version });
  versions.set(streamId, version + 1);
  appended += 1;
}
console.log(JSON.stringify({ appended, durationMs }));
await store.close();
