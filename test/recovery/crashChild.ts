// Run by crashResume.test.ts as a process the test kills at random moments: it grows `trees` trees one after
// another (0: only finishes those begun) on a PGlite data dir, with recovery "resume", picking up whatever the last killed process left.
// Prints `inflight <positions>` (model calls the log shows made without a reply, as the last process left
// them), `open` once the runtime is up (and resuming), `tree <root id>` as each tree completes, then `done`.
import { appendFileSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { createRuntime, openPgliteStore, scriptedModel, type RecordedEvent, type Runtime } from "../../src/index.ts";
import { stepOf, treeReply, treeTools } from "./tree.ts";

const [dataDir, treesArg, sideEffects, modelCalls] = process.argv.slice(2) as [string, string, string, string];
// 0: finish the trees already begun, start none.
const trees = Number(treesArg);
const jitter = () => delay(Math.floor(Math.random() * 25));

const store = await openPgliteStore({ dataDir });
const log: RecordedEvent[] = [];
for await (const e of store.iterateAll(0)) log.push(e);
process.stdout.write(`inflight ${inFlight(log).join(" ")}\n`);

const rt = await createRuntime({
  store,
  model: scriptedModel(async (req) => {
    appendFileSync(modelCalls, `${req.contextId} ${stepOf(req)}\n`);
    // Latency, so kills land inside calls as well as between them.
    await jitter();
    return treeReply(req);
  }),
  tools: treeTools({ sideEffects, onTool: () => jitter() }),
  recovery: "resume",
  limits: { passivateAfterMs: 50 },
});
process.stdout.write("open\n");

for (;;) {
  const roots = (await rt.contexts())
    .filter((c) => c.depth === 0)
    .sort((a, b) => a.createdPosition - b.createdPosition);
  const open = roots.find((r) => r.lastRun?.status !== "completed");
  if (open?.status === "running") await runEnd(rt, open.id, open.currentRunId!);
  else if (open) await rt.send(open.id, "grow the tree");
  else if (roots.length < trees || roots.length === 0)
    await rt.send((await rt.createContext({ name: `tree ${roots.length + 1}` })).id, "grow the tree");
  else break;
  const done = (await rt.contexts()).filter((c) => c.depth === 0 && c.lastRun?.status === "completed").length;
  process.stdout.write(`tree ${done}\n`);
}
await rt.close();
await store.close();
process.stdout.write("done\n");

/** Resolves once the run `runId` of `id` (resuming here) has ended. */
async function runEnd(runtime: Runtime, id: string, runId: string): Promise<void> {
  await new Promise<void>((resolve) => {
    void runtime.subscribe(
      (e) => {
        if (
          e.streamId === id &&
          ["RunCompleted", "RunFailed", "RunStopped", "RunInterrupted"].includes(e.type) &&
          (e.data as { runId: string }).runId === runId
        )
          resolve();
      },
      { after: 0 },
    );
  });
}

/** Positions of ModelCalled facts with no reply, no failure and no later attempt: calls in flight when the log stopped. */
function inFlight(events: readonly RecordedEvent[]): number[] {
  const open = new Map<string, RecordedEvent>();
  for (const e of events) {
    if (e.type === "ModelCalled") open.set(`${e.data.runId}/${e.data.step}`, e);
    else if (e.type === "ModelReplied" || e.type === "ModelCallFailed") open.delete(`${e.data.runId}/${e.data.step}`);
  }
  return [...open.values()].map((e) => e.globalPosition);
}
