// fast-check arbitrary for HistoryCompacted: valid data whose run, topics and tool calls come from the given pools.
import fc from "fast-check";
import type { RunId } from "../events/ids.ts";
import type { DomainEvent } from "../events/schema.ts";

const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

/** One valid HistoryCompacted fact. */
export const historyCompactedArb = (
  runId: fc.Arbitrary<RunId>,
  topicId: fc.Arbitrary<RunId>,
  toolCallId: fc.Arbitrary<string>,
  text: fc.Arbitrary<string>,
): fc.Arbitrary<DomainEvent> =>
  fc
    .record({
      runId,
      step: fc.nat({ max: 20 }),
      model: fc.constant("gpt-4o-mini"),
      topics: fc.array(topicId, { maxLength: 3 }),
      summary: text,
      elided: fc.array(fc.record({ toolCallId, tokens: fc.nat({ max: 5000 }) }), { maxLength: 2 }),
      tokensBefore: fc.nat({ max: 100_000 }),
      tokensAfter: fc.nat({ max: 100_000 }),
      trigger: fc.constantFrom("threshold" as const, "endpoint" as const),
      usage: nullable(fc.record({ inputTokens: fc.nat({ max: 10_000 }), outputTokens: fc.nat({ max: 10_000 }) })),
      calls: fc.nat({ max: 4 }),
      durationMs: fc.nat({ max: 60_000 }),
    })
    .map((data) => ({ type: "HistoryCompacted" as const, data }));
