// A child process for the durability and lock tests: `append <dataDir>` or `hold <dataDir>`.
//   append: appends one event at a time to ctx-durable, printing "ack <version> <position>" after
//           each has returned, until it is killed.
//   hold:   appends 3 events, prints "ready <pid>", and on the stdin line "close" appends one more,
//           closes the store and prints "closed".
import { createInterface } from "node:readline";
import { asRunId } from "../../src/events/ids.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";

const [mode, dataDir] = process.argv.slice(2);
if (!dataDir || (mode !== "append" && mode !== "hold")) throw new Error("usage: storeChild.ts append|hold <dataDir>");

const event = (text: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
});
const store = await openPgliteStore({ dataDir });

if (mode === "append") {
  for (let version = 1; ; version++) {
    const { positions } = await store.append("ctx-durable", [event(`m${version}`)], {
      expectedVersion: version === 1 ? "no_stream" : version - 1,
    });
    process.stdout.write(`ack ${version} ${positions[0]}\n`);
  }
} else {
  await store.append("ctx-held", [event("h1"), event("h2"), event("h3")], { expectedVersion: "no_stream" });
  process.stdout.write(`ready ${process.pid}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line !== "close") continue;
    await store.append("ctx-held", [event("h4")], { expectedVersion: 3 });
    await store.close();
    process.stdout.write("closed\n");
    process.exit(0);
  }
}
