// fast-check arbitraries for the budget facts: valid BudgetSet … BudgetRestored data.
import fc from "fast-check";
import type { ContextId, RunId } from "../events/ids.ts";
import type { BudgetAmount, BudgetLimits, DomainEvent } from "../events/schema.ts";

const tokens = fc.nat({ max: 100_000 });
const limitsArb: fc.Arbitrary<BudgetLimits> = fc.record(
  {
    inputTokens: tokens,
    outputTokens: tokens,
    totalTokens: tokens,
    costUsd: fc.integer({ min: 0, max: 1000 }).map((n) => n / 100),
    modelCalls: fc.nat({ max: 100 }),
    toolCalls: fc.nat({ max: 100 }),
    wallClockMs: fc.nat({ max: 3_600_000 }),
  },
  { requiredKeys: [] },
);
const amountArb: fc.Arbitrary<BudgetAmount> = fc.record({
  inputTokens: tokens,
  outputTokens: tokens,
  costUsd: fc.integer({ min: 0, max: 1000 }).map((n) => n / 100),
  modelCalls: fc.nat({ max: 1 }),
  toolCalls: fc.nat({ max: 8 }),
});
const idArb = fc.constantFrom("r1", "r2", "r3", "e1", "e2");

type BudgetType =
  "BudgetSet" | "BudgetExtended" | "BudgetReserved" | "BudgetSettled" | "BudgetExhausted" | "BudgetRestored";

/** One valid budget fact of `type`, its ids drawn from the given pools so it can refer to other events. */
export const budgetEventArb = (
  type: BudgetType,
  contextId: fc.Arbitrary<ContextId>,
  runId: fc.Arbitrary<RunId>,
): fc.Arbitrary<DomainEvent> => {
  switch (type) {
    case "BudgetSet":
      return fc.record({ rootContextId: contextId, limits: limitsArb }).map((data) => ({ type, data }));
    case "BudgetExtended":
      return fc.record({ rootContextId: contextId, more: limitsArb }).map((data) => ({ type, data }));
    case "BudgetReserved":
      return fc
        .record({ reservationId: idArb, contextId, runId, step: fc.nat({ max: 5 }), amount: amountArb })
        .map((data) => ({ type, data }));
    case "BudgetSettled":
      return fc.record({ reservationId: idArb, spent: amountArb }).map((data) => ({ type, data }));
    case "BudgetExhausted":
      return fc
        .record({
          exhaustionId: idArb,
          runId,
          step: fc.nat({ max: 5 }),
          rootContextId: contextId,
          limit: fc.constantFrom("inputTokens" as const, "totalTokens" as const, "costUsd" as const),
          limits: limitsArb,
          spent: amountArb,
          reserved: amountArb,
          asked: amountArb,
        })
        .map((data) => ({ type, data }));
    case "BudgetRestored":
      return fc.record({ exhaustionId: idArb, runId }).map((data) => ({ type, data }));
  }
};
