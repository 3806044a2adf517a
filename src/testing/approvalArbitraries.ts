// fast-check arbitraries for the approval facts: valid ApprovalRequested / ApprovalGranted / ApprovalDenied data.
import fc from "fast-check";
import type { ApprovalId, ContextId, RunId } from "../events/ids.ts";
import type { DomainEvent } from "../events/schema.ts";

const approvalIdArb = fc.uuid().map((s) => s as ApprovalId);
const byArb = fc.constantFrom("ops@example.test", "alice", "timeout");
const argumentsArb = fc.oneof(
  fc.constant({}),
  fc.record({ service: fc.constantFrom("api", "db"), replicas: fc.nat({ max: 9 }) }),
);

/** One valid approval fact of `type`, its ids drawn from the given pools so it can refer to other events. */
export const approvalEventArb = (
  type: "ApprovalRequested" | "ApprovalGranted" | "ApprovalDenied",
  toolCallId: fc.Arbitrary<string>,
  contextId: fc.Arbitrary<ContextId>,
  runId: fc.Arbitrary<RunId>,
): fc.Arbitrary<DomainEvent> => {
  const common = { approvalId: approvalIdArb, runId, toolCallId };
  switch (type) {
    case "ApprovalRequested":
      return fc
        .record({
          ...common,
          step: fc.nat({ max: 5 }),
          tool: fc.constantFrom("deploy", "send_email", "call_subordinate"),
          arguments: argumentsArb,
          contextId,
          agentNumber: fc.nat({ max: 5 }),
          expiresAt: fc.option(fc.constant("2026-11-30T00:05:00.000Z"), { nil: null }),
        })
        .map((data) => ({ type, data }));
    case "ApprovalGranted":
      return fc
        .record({ ...common, by: byArb, note: fc.option(fc.string({ maxLength: 12 }), { nil: null }) })
        .map((data) => ({ type, data }));
    case "ApprovalDenied":
      return fc
        .record({ ...common, by: byArb, reason: fc.constantFrom("too risky", "timed out") })
        .map((data) => ({ type, data }));
  }
};
