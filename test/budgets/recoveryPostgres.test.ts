// The reservations a dead process left open, settled by the process that takes its run over, on one PostgreSQL log:
// two runtimes with their own stores, as two processes would be. The reply the dead process recorded settled its
// call; the call it died in is released to nothing; the tree then holds nothing and spent what its replies used.
import { describe, expect, it } from "vitest";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import type { ModelTurn } from "../../src/models/port.ts";
import { budgetStreamOf, readBudget } from "../../src/projections/budget.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { eventually } from "../support/async.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const TTL_MS = 500;
const USAGE = { inputTokens: 300, outputTokens: 30 };

describeWithPostgres("budget recovery between runtimes on one PostgreSQL log", () => {
  const db = usePostgresDatabase("actorzero_budget_recovery");

  describe("when the runtime driving a budgeted run dies in its second model call", () => {
    it("the survivor's takeover releases that call's reservation, keeps the first reply's spend, and the tree holds nothing", async () => {
      const url = await db.fresh();
      const storeA = await openPostgresStore({ url });
      let arrived!: () => void;
      const secondCall = new Promise<void>((r) => (arrived = r));
      let calls = 0;
      const rtA = await createRuntime({
        store: storeA,
        // The first reply is unusable (a blank text), so the run warns the model and calls it again; that call never answers.
        model: scriptedModel((): ModelTurn | Promise<ModelTurn> => {
          if (++calls === 1) return { text: "   ", usage: USAGE };
          arrived();
          return new Promise<ModelTurn>(() => undefined);
        }),
        owner: "doomed",
        limits: { leaseTtlMs: TTL_MS },
      });
      const root = await rtA.createContext({ budget: { totalTokens: 100_000 } });
      void rtA.send(root.id, "work until you die").catch(() => undefined);
      await secondCall;

      const storeB = await openPostgresStore({ url });
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => ({ text: "never asked" })),
        owner: "survivor",
        recovery: "interrupt",
        limits: { leaseTtlMs: TTL_MS },
      });
      try {
        // The budget as B reads it while A lives: the second call's reservation is held, the first settled by its reply.
        const during = await rtB.budget(root.id);
        expect(during.reserved.modelCalls).toBe(1);
        expect(during.spent).toMatchObject({ ...USAGE, modelCalls: 1 });

        // A dies: its connections close, nothing renews its lease; B's sweep takes the run over once it expires.
        await storeA.close();
        await eventually(
          async () => (await storeB.readStream(root.id)).some((e) => e.type === "RunInterrupted"),
          TTL_MS * 10,
          "the survivor's takeover",
        );

        const after = await rtB.budget(root.id);
        expect(after.reserved.modelCalls).toBe(0);
        expect(after.spent).toMatchObject({ ...USAGE, modelCalls: 1 });
        // The log says the same to a reader with no state of its own, and every reservation is settled once.
        const folded = await readBudget(storeB, root.id);
        expect(folded.open).toEqual({});
        expect(folded.spent).toMatchObject({ ...USAGE, modelCalls: 1 });
        const budgetFacts = await storeB.readStream(budgetStreamOf(root.id));
        const reserved = budgetFacts.flatMap((e) => (e.type === "BudgetReserved" ? [e.data.reservationId] : []));
        const replies = (await storeB.readStream(root.id)).flatMap((e) =>
          e.type === "ModelReplied" && e.data.settles ? [e.data.settles.reservationId] : [],
        );
        const released = budgetFacts.flatMap((e) => (e.type === "BudgetSettled" ? [e.data] : []));
        expect(reserved).toHaveLength(2);
        expect([...replies, ...released.map((r) => r.reservationId)].sort()).toEqual([...reserved].sort());
        expect(released).toHaveLength(1);
        expect(released[0]!.spent).toMatchObject({ inputTokens: 0, outputTokens: 0, modelCalls: 0 });
      } finally {
        await rtB.close();
        await storeB.close();
      }
    }, 60_000);
  });
});
