// Run by crash.test.ts as a separate process: starts a run whose model never answers, says so, and waits to be killed.
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/models/scripted.ts";

const dataDir = process.argv[2]!;
const store = await openPgliteStore({ dataDir });
const rt = await createRuntime({
  store,
  model: scriptedModel((req) => {
    if (req.agentNumber > 0) return new Promise(() => undefined); // the subordinate's call hangs mid-run
    return {
      toolCalls: [
        { id: "t1", name: "call_subordinate", arguments: JSON.stringify({ message: "dig deeper", name: "digger" }) },
      ],
    };
  }),
});
const ctx = await rt.createContext({ name: "doomed" });
void rt.send(ctx.id, "work until killed");
const unsubscribe = await rt.subscribe(
  (e) => {
    // Acknowledge each event once it is committed; the child's model call never returns.
    process.stdout.write(`ack ${e.globalPosition} ${e.streamId} ${e.type}\n`);
    if (e.type === "ModelCalled" && e.streamId !== ctx.id) {
      process.stdout.write(`ready ${ctx.id}\n`);
      unsubscribe();
    }
  },
  { after: 0 },
);
