// fast-check arbitraries for what happens around a model call besides its reply: its failure, its wait in the queue.
import fc from "fast-check";
import type { RunId } from "../events/ids.ts";
import { ModelErrorReason, type DomainEvent } from "../events/schema.ts";

const count = fc.nat({ max: 10_000 });
const smallCount = fc.nat({ max: 5 });

type ModelCallType = "ModelCallFailed" | "ModelCallQueued" | "ModelCallAdmitted";

/** One valid fact of `type` for a run drawn from `runId`; `text` makes its messages. */
export const modelCallEventArb = (
  type: ModelCallType,
  runId: fc.Arbitrary<RunId>,
  text: fc.Arbitrary<string>,
): fc.Arbitrary<DomainEvent> => {
  switch (type) {
    case "ModelCallFailed":
      return fc
        .record({
          runId,
          step: smallCount,
          attempt: smallCount,
          reason: fc.constantFrom(...ModelErrorReason.options),
          message: text,
          retryable: fc.boolean(),
          retryInMs: fc.option(count, { nil: null }),
        })
        .map((data) => ({ type, data }));
    case "ModelCallQueued":
      return fc
        .record({
          runId,
          step: smallCount,
          attempt: smallCount,
          preset: fc.option(fc.constantFrom("Default", "fast"), { nil: null }),
          ahead: count,
        })
        .map((data) => ({ type, data }));
    case "ModelCallAdmitted":
      return fc
        .record({ runId, step: smallCount, attempt: smallCount, waitedMs: count })
        .map((data) => ({ type, data }));
  }
};
