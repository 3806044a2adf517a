// Model-based: random command sequences over a real runtime on PGlite, compared with the reference model, every invariant checked after every command.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { openPgliteStore, type EventStore } from "../../src/index.ts";
import {
  LifecycleHarness,
  lifecycleCommands,
  lifecycleModel,
  initialModel,
  checkInvariants,
  HARNESS_LIMITS,
} from "../../src/testing/index.ts";

const numRuns = Number(process.env.ACTORZERO_MBT_RUNS ?? 200);
const seed = process.env.ACTORZERO_MBT_SEED ? Number(process.env.ACTORZERO_MBT_SEED) : undefined;
/** A long run (ACTORZERO_MBT_RUNS=2000) needs more than the default ten minutes. */
const timeoutMs = Number(process.env.ACTORZERO_MBT_TIMEOUT_MS ?? 600_000);

let store: EventStore;
beforeAll(async () => {
  store = await openPgliteStore();
});
afterAll(async () => {
  await store.close();
});

describe("given random sequences of sends, interventions, pauses, stops, delegations, model failures, restarts and crashes", () => {
  it(
    `the runtime does what the reference model says and keeps every invariant after every command (${numRuns} sequences)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.commands(lifecycleCommands(), { maxCommands: 12, size: "max" }), async (commands) => {
          let harness: LifecycleHarness | undefined;
          try {
            await fc.asyncModelRun(async () => {
              // Each sequence starts on a fresh root that has just been sent its first message.
              harness = await LifecycleHarness.start({ store });
              harness.send(0, "first message");
              harness.script.push("send c0 a message");
              const model = lifecycleModel.send(initialModel(HARNESS_LIMITS), 0);
              await harness.settle(model);
              return { model, real: harness };
            }, commands);
          } finally {
            if (process.env.ACTORZERO_MBT_DEBUG) console.log(harness?.script.join(" | "));
            await harness?.close();
          }
        }),
        { numRuns, ...(seed !== undefined ? { seed } : {}), endOnFailure: process.env.ACTORZERO_MBT_SHRINK === "0" },
      );
    },
    timeoutMs,
  );

  it("after all sequences, rebuilding the whole log from zero equals the live projections", async () => {
    const harness = await LifecycleHarness.start({ store });
    const violations = await checkInvariants(harness.rt, { rebuild: "full" });
    await harness.close();
    expect(violations).toEqual([]);
  }, 300_000);
});
