// Run by approvalRestart.test.ts as a separate process: a run whose call needs approval parks; the process
// says so, then waits to be killed ("wait"), or closes its runtime and exits ("close").
import { waitFor } from "xstate";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { createRuntime, internalsOf } from "../../src/runtime/runtime.ts";
import { parkingModel } from "./approvalScript.ts";
import { deployTool } from "../support/approvalTools.ts";

const [where, mode] = process.argv.slice(2) as [string, "wait" | "close"];
const store = where.startsWith("postgres")
  ? await openPostgresStore({ url: where })
  : await openPgliteStore({ dataDir: where });
const deploy = deployTool((env) => {
  process.stdout.write(`ran deploy ${env}\n`);
  return `deployed to ${env} by ${process.pid}`;
});
const rt = await createRuntime({ store, model: parkingModel(), tools: [deploy], limits: { leaseTtlMs: 500 } });
const ctx = await rt.createContext({ name: "parker" });
const unsubscribe = await rt.subscribe(
  (e) => {
    if (e.type !== "ApprovalRequested") return;
    unsubscribe();
    void (async () => {
      await waitFor(rt.actor(ctx.id)!, (s) => s.matches({ running: "parked" }));
      // Parking lets the run's lease go in the background: say "parked" once it is gone, so the parent
      // (here, or after a SIGKILL) never meets the lease of a run that is only waiting for a decision.
      await internalsOf(rt).active.get(ctx.id)!.leaseReleased;
      if (mode === "close") {
        await rt.close();
        await store.close();
      }
      process.stdout.write(`parked ${ctx.id} ${e.data.approvalId}\n`);
      if (mode === "close") process.exit(0);
    })();
  },
  { after: await store.headPosition() },
);
void rt.start(ctx.id, "ship it");
