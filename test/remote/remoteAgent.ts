// The remote agent for twoProcesses.test.ts: a runtime on its own PGlite log, served (A2A under /a2a) with a token.
//
// argv: <dataDir> <token>
// stdin, one line each: release (the held model calls answer) | quit
// stdout, one line each: ready <url> | model <text of the message> | bye
// A message containing "hold" keeps its model call open until `release` (or until its run is stopped).
import { createInterface } from "node:readline";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { serve } from "../../src/server/serve.ts";

const [dataDir, token] = process.argv.slice(2) as [string, string];
const say = (line: string) => process.stdout.write(`${line}\n`);
let release!: () => void;
const released = new Promise<void>((resolve) => (release = resolve));

const model = scriptedModel(async (req) => {
  const text = String(req.messages.filter((m) => m.role === "user").at(-1)?.content ?? "");
  say(`model ${text}`);
  if (text.includes("hold")) await released;
  return { text: `far side did: ${text}` };
});

const store = await openPgliteStore({ dataDir });
const rt = await createRuntime({ store, model, limits: { retryBaseMs: 1, retryMaxMs: 5 } });
const server = await serve(rt, { port: 0, token });
say(`ready ${server.url}`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "release") release();
  if (line === "quit") break;
}
await server.close({ whileDraining: () => rt.close() });
await store.close();
say("bye");
