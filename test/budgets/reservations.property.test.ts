// Reserve, then settle, under random interleavings: parallel jobs of two processes on one log never jointly overspend.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BudgetAmount, EventStore } from "../../src/index.ts";
import { BudgetLedger } from "../../src/runtime/budgetLedger.ts";
import { readBudget } from "../../src/projections/budget.ts";
import { asContextId, asRunId } from "../../src/events/ids.ts";
import { freshPgliteStore } from "../support/pglite.ts";

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore({ inMemory: true });
});
afterAll(async () => {
  await store.close();
});

const amount = (inputTokens: number, outputTokens: number): BudgetAmount => ({
  inputTokens,
  outputTokens,
  costUsd: 0,
  modelCalls: 1,
  toolCalls: 0,
});

/** A job's calls: each asks its counted input plus the most output, and replies with at most that much. */
// `byReply`: the call's ModelReplied settles it (the run's path); else a BudgetSettled does (a release, an older log).
const callArb = fc.record({
  input: fc.integer({ min: 1, max: 400 }),
  maxOutput: fc.integer({ min: 1, max: 200 }),
  share: fc.double({ min: 0, max: 1, noNaN: true }),
  byReply: fc.boolean(),
});
const jobsArb = fc.array(fc.array(callArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 });

let tree = 0;

// Two processes on a log both append to (reservations recorded on the log, checked in their append), or the one
// writer of a log (reservations held in its memory, decided in the tree's turn).
describe.each([
  { log: "shared by two processes", logsReservations: true, processes: 2 },
  { log: "with one writer", logsReservations: false, processes: 1 },
])("when parallel jobs reserve and settle against one tree's budget in any order, on a log $log", (mode) => {
  it("never spends more than the budget plus one reservation, and counts each call's usage once", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), jobsArb, fc.integer({ min: 0, max: 3000 }), async (s, jobs, limit) => {
        const root = `tree-${++tree}-${Math.random().toString(16).slice(2)}`;
        // Each process its own ledger (its own folded state), one log.
        const ledgers = Array.from(
          { length: mode.processes },
          () => new BudgetLedger(store, { logsReservations: mode.logsReservations }),
        );
        // The jobs' contexts are the root's subordinates: a first read of the tree finds their replies there.
        await store.append(
          root,
          jobs.map((_, j) => ({
            type: "SubordinateCalled" as const,
            data: {
              runId: asRunId("run-root"),
              toolCallId: `call-${j}`,
              childContextId: asContextId(`${root}-job-${j}`),
              fresh: true,
              jobId: null,
            },
          })),
          { expectedVersion: "no_stream" },
        );
        await ledgers[0]!.change(root, () => ({
          events: [{ type: "BudgetSet", data: { rootContextId: asContextId(root), limits: { totalTokens: limit } } }],
          result: undefined,
        }));
        const settled: BudgetAmount[] = [];
        const runJob = async (calls: (typeof jobs)[number], j: number) => {
          const ledger = ledgers[j % ledgers.length]!;
          for (const [i, c] of calls.entries()) {
            const reservationId = `${root}-${j}-${i}`;
            const asked = amount(c.input, c.maxOutput);
            const contextId = asContextId(`${root}-job-${j}`);
            const runId = asRunId(`run-${j}`);
            const refused = await s.schedule(
              ledger.reserve(root, { reservationId, contextId, runId, step: i + 1, amount: asked }, () => 0),
            );
            if (refused) return;
            const spent = amount(c.input, Math.floor(c.maxOutput * c.share));
            if (c.byReply) {
              // The reply settles it: this process folds its own append; the other learns it from the log only.
              const reply = await s.schedule(
                store.append(
                  contextId,
                  [
                    {
                      type: "ModelReplied",
                      data: {
                        runId,
                        step: i + 1,
                        text: "ok",
                        toolCalls: [],
                        usage: null,
                        settles: { reservationId, spent },
                      },
                    },
                  ],
                  { expectedVersion: "any" },
                ),
              );
              ledger.replied(root, reply.events);
            } else await s.schedule(ledger.settle(root, reservationId, spent));
            // A settle retried (a process that did not see its own append) counts once.
            await s.schedule(ledgers[(j + 1) % ledgers.length]!.settle(root, reservationId, spent));
            settled.push(spent);
          }
        };
        await s.waitFor(Promise.all(jobs.map(runJob)));
        const state = await readBudget(store, root);
        const biggest = Math.max(...jobs.flat().map((c) => c.input + c.maxOutput));
        const spentTotal = state.spent.inputTokens + state.spent.outputTokens;
        expect(spentTotal).toBeLessThanOrEqual(limit + biggest);
        // Checked in the append that records it: even the reservations never passed the limit.
        expect(spentTotal).toBeLessThanOrEqual(limit);
        expect(state.reserved.modelCalls).toBe(0);
        expect(state.spent.modelCalls).toBe(settled.length);
        expect(state.spent.inputTokens).toBe(settled.reduce((n, a) => n + a.inputTokens, 0));
        expect(state.spent.outputTokens).toBe(settled.reduce((n, a) => n + a.outputTokens, 0));
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
