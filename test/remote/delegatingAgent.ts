// The delegating runtime for twoProcesses.test.ts: A0 hands its message to `far`, a remote profile (the other process).
//
// argv: <dataDir> <profilesDir> <message | "--reopen">
// env: FAR_TOKEN, the remote agent's token (the profile names the variable)
// stdout, one line each: root <contextId> | accepted <remote task id> | open (reopened: the cut-off runs resume) |
//   done <status> <response as JSON>
// With a message, a new root is sent it; with --reopen, the log is opened (recovery resumes what a kill cut off)
// and the one root's run is awaited.
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";

const [dataDir, profilesDir, message] = process.argv.slice(2) as [string, string, string];
const say = (line: string) => process.stdout.write(`${line}\n`);

const model = scriptedModel((req) => {
  const last = req.messages.at(-1)!;
  if (last.role === "tool") return { text: `A0 got: ${String(last.content).split("\n")[0]}` };
  return {
    toolCalls: [{ id: "far1", name: "call_subordinate", arguments: { message: String(last.content), profile: "far" } }],
  };
});

const store = await openPgliteStore({ dataDir });
let rootId: string | null = null;
const ends = new Map<string, RecordedEvent>();
let waiter: (() => void) | null = null;
store.subscribe(0, (e) => {
  if (e.type === "RemoteTaskAccepted") say(`accepted ${e.data.taskId}`);
  if (e.type === "RunCompleted" || e.type === "RunFailed" || e.type === "RunStopped" || e.type === "RunInterrupted") {
    ends.set(e.streamId, e);
    waiter?.();
  }
});
const rt = await createRuntime({ store, model, profiles: [profilesDir], limits: { remotePollMs: 50 } });
if (message === "--reopen") {
  rootId = (await rt.contexts()).find((c) => c.kind === "root")!.id;
  say("open");
} else {
  rootId = (await rt.createContext()).id;
  say(`root ${rootId}`);
  await rt.start(rootId, message);
}
while (!ends.has(rootId)) await new Promise<void>((resolve) => (waiter = resolve));
const end = ends.get(rootId)!;
say(`done ${end.type} ${JSON.stringify(end.type === "RunCompleted" ? end.data.response : end.data)}`);
await rt.close();
await store.close();
