// Run by crash.test.ts as a process the test kills (SIGKILL) in the middle of a budgeted 64-leaf fan-out.
// `start <limit>`: a new root with a token budget of <limit> takes the task; prints `root <id>`, then `call` as each
// model call begins. `resume`: opens the log (recovery "resume": the runs the killed process left go on here),
// waits until the tree has come to rest on its budget (`rest <budget json>`), extends it, and waits for the
// root's run to end (`completed`). Both print `open` once the runtime is up.
import { setTimeout as delay } from "node:timers/promises";
import { createRuntime, openPgliteStore, scriptedModel } from "../../src/index.ts";
import { atRest, fanOutModel } from "./support.ts";

const [mode, dataDir, limit] = process.argv.slice(2) as ["start" | "resume", string, string | undefined];
export const PRESETS = {
  Default: { model: "gpt-4o-mini", maxOutputTokens: 64, price: { inputPerMTok: 0.15, outputPerMTok: 0.6 } },
};

const store = await openPgliteStore({ dataDir });
const rt = await createRuntime({
  store,
  model: scriptedModel(async (req) => {
    process.stdout.write("call\n");
    // Latency, so the kill lands inside calls as well as between them.
    await delay(Math.floor(Math.random() * 20));
    return fanOutModel(req);
  }),
  presets: PRESETS,
  recovery: "resume",
  limits: { retryBaseMs: 1, retryMaxMs: 5, passivateAfterMs: 50 },
});
process.stdout.write("open\n");

if (mode === "start") {
  const root = await rt.createContext({ budget: { totalTokens: Number(limit) } });
  process.stdout.write(`root ${root.id}\n`);
  await rt.send(root.id, "split the work");
} else {
  const root = (await rt.contexts()).find((c) => c.depth === 0)!;
  const ended = async () => (await rt.context(root.id))!.status !== "running";
  // Each fact appended may be the one that brings the tree to rest, or ends its root's run.
  const reached = await new Promise<"rest" | "ended">((resolve) => {
    const check = async () => {
      if (await ended()) resolve("ended");
      else if (await atRest(rt, root.id)) resolve("rest");
    };
    void rt.subscribe(() => void check()).then(() => check());
  });
  if (reached === "rest") {
    process.stdout.write(`rest ${JSON.stringify(await rt.budget(root.id))}\n`);
    const done = new Promise<void>((resolve) => {
      void rt
        .subscribe((e) => {
          if (
            e.streamId === root.id &&
            (e.type === "RunCompleted" || e.type === "RunFailed" || e.type === "RunStopped")
          )
            resolve();
        })
        .then(async () => {
          if (await ended()) resolve();
        });
    });
    await rt.extendBudget(root.id, { totalTokens: 1_000_000 });
    await done;
  }
  process.stdout.write(`${(await rt.context(root.id))!.lastRun?.status}\n`);
}
await rt.close();
await store.close();
