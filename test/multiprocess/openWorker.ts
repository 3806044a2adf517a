// A process for emptyDatabase.test.ts: opens a store and a runtime on each of the databases it is given, all at once, when told to.
//
// argv: <postgres url>…
// stdin: "go" (one line)
// stdout: "ready" once loaded; then "ok" when every runtime opened and closed, or "fail <message>".
import { createInterface } from "node:readline";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";

const urls = process.argv.slice(2);
const say = (line: string) => process.stdout.write(`${line}\n`);

const openOne = async (url: string) => {
  const store = await openPostgresStore({ url, poolSize: 2 });
  try {
    const rt = await createRuntime({ store, model: scriptedModel(() => ({ text: "unused" })) });
    await rt.close();
  } finally {
    await store.close();
  }
};

const lines = createInterface({ input: process.stdin });
say("ready");
for await (const line of lines) if (line === "go") break;
lines.close();
try {
  await Promise.all(urls.map(openOne));
  say("ok");
} catch (e) {
  say(`fail ${String((e as Error).message).replace(/\s+/g, " ")}`);
  console.error((e as Error).stack, (e as { where?: string }).where, (e as { detail?: string }).detail);
}
