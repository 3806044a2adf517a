// fast-check arbitraries for the log: a valid event of every type (recorded sequences over a few contexts: sequenceArbitraries.ts).
import fc from "fast-check";
import type { ContextId, JobId, RunId } from "../events/ids.ts";
import { approvalEventArb } from "./approvalArbitraries.ts";
import { historyCompactedArb } from "./compactionArbitraries.ts";
import { jsonValueArb } from "./jsonArbitrary.ts";

export { jsonValueArb } from "./jsonArbitrary.ts";
import { budgetEventArb } from "./budgetArbitraries.ts";
import { modelCallEventArb } from "./modelCallArbitraries.ts";
import { remoteEventArb } from "./remoteArbitraries.ts";
import { modelOverrideArb } from "./modelOverrideArbitrary.ts";
export { modelOverrideArb } from "./modelOverrideArbitrary.ts";
import {
  EVENT_TYPES,
  JobStatus,
  RunFailureReason,
  type DomainEvent,
  type EventOf,
  type EventType,
  type Superior,
} from "../events/schema.ts";

/** Text as it appears in messages: printable, sometimes empty, sometimes multi-line. */
export const textArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.lorem({ maxCount: 6 }),
  fc.constant('line one\nline "two"'),
);

/** Where ids come from: swap in small pools so that generated events refer to each other. */
export type IdPools = {
  contextId: fc.Arbitrary<string>;
  runId: fc.Arbitrary<string>;
  toolCallId: fc.Arbitrary<string>;
  jobId: fc.Arbitrary<string>;
};

export const defaultPools: IdPools = {
  contextId: fc.uuid(),
  runId: fc.uuid(),
  toolCallId: fc.oneof(fc.uuid(), fc.string({ minLength: 1, maxLength: 10 })),
  jobId: fc.uuid().map((u) => `callsubordin-${u.slice(0, 8)}`),
};

export const count = fc.nat({ max: 10_000 });
const smallCount = fc.nat({ max: 5 });
export const cid = (p: IdPools) => p.contextId.map((s) => s as ContextId);
const rid = (p: IdPools) => p.runId.map((s) => s as RunId);
export const jid = (p: IdPools) => p.jobId.map((s) => s as JobId);
export const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

export const superiorArb = (p: IdPools): fc.Arbitrary<Superior> =>
  fc.record({ contextId: cid(p), runId: rid(p), toolCallId: p.toolCallId, jobId: nullable(jid(p)) });
const toolCallArb = (p: IdPools) =>
  fc.record({
    id: p.toolCallId,
    name: fc.constantFrom("call_subordinate", "response", "parallel", "search"),
    arguments: jsonValueArb,
  });

const ev = <T extends EventType>(type: T, data: fc.Arbitrary<EventOf<T>["data"]>): fc.Arbitrary<DomainEvent> =>
  data.map((d) => ({ type, data: d }) as DomainEvent);

/** One valid event of `type`, every field generated to satisfy its zod schema. */
export const eventOfTypeArb = (type: EventType, p: IdPools = defaultPools): fc.Arbitrary<DomainEvent> => {
  const runId = rid(p);
  // How a subordinate's call and its return name the call: the caller's run and tool call, and the child.
  const subordinateCall = () => ({ runId, toolCallId: p.toolCallId, childContextId: cid(p) });
  switch (type) {
    case "ContextCreated":
      return ev(
        type,
        fc.record({
          contextId: cid(p),
          name: textArb,
          label: textArb,
          profile: fc.constantFrom("", "default", "developer", "researcher"),
          project: nullable(fc.constantFrom("alpha", "beta")),
          agentNumber: smallCount,
          depth: smallCount,
          kind: fc.constantFrom("root" as const, "subordinate" as const),
          parentContextId: nullable(cid(p)),
          parentAgentNumber: nullable(smallCount),
          rootContextId: cid(p),
          slot: nullable(fc.oneof(fc.constant("default"), p.jobId)),
          modelOverride: nullable(modelOverrideArb),
        }),
      );
    case "ContextRenamed":
      return ev(type, fc.record({ name: textArb, label: textArb }));
    case "ModelOverrideSet":
      return ev(type, fc.record({ modelOverride: nullable(modelOverrideArb) }));
    case "MessageReceived":
      return ev(
        type,
        fc.record({ runId, text: textArb, sender: fc.constantFrom("user" as const, "superior" as const) }),
      );
    case "InterventionReceived":
      return ev(type, fc.record({ runId, text: textArb }));
    case "RunStarted":
      return ev(
        type,
        fc.record({ runId, model: fc.constantFrom("gpt-4o-mini", "llama3"), superior: nullable(superiorArb(p)) }),
      );
    case "ModelCalled":
      return ev(
        type,
        fc.record({ runId, step: smallCount, attempt: smallCount, model: fc.constantFrom("gpt-4o-mini") }),
      );
    case "ModelReplied":
      return ev(
        type,
        fc.record({
          runId,
          step: smallCount,
          text: nullable(textArb),
          toolCalls: fc.array(toolCallArb(p), { maxLength: 3 }),
          usage: nullable(fc.record({ inputTokens: count, outputTokens: count })),
        }),
      );
    case "ModelCallFailed":
    case "ModelCallQueued":
    case "ModelCallAdmitted":
      return modelCallEventArb(type, runId, textArb);
    case "ModelWarned":
      return ev(type, fc.record({ runId, step: smallCount, text: textArb }));
    case "ToolCalled":
      return ev(
        type,
        fc.record({
          runId,
          step: smallCount,
          toolCallId: p.toolCallId,
          name: fc.constantFrom("search", "call_subordinate"),
          arguments: jsonValueArb,
        }),
      );
    case "ToolReturned":
      return ev(type, fc.record({ runId, toolCallId: p.toolCallId, name: fc.constantFrom("search"), result: textArb }));
    case "ToolFailed":
      return ev(
        type,
        fc.record({
          runId,
          toolCallId: p.toolCallId,
          name: fc.constantFrom("search"),
          error: textArb,
          repairable: fc.boolean(),
        }),
      );
    case "SubordinateCalled":
      return ev(
        type,
        fc.record({
          ...subordinateCall(),
          fresh: fc.boolean(),
          jobId: nullable(jid(p)),
        }),
      );
    case "SubordinateReturned":
      return ev(
        type,
        fc.record({
          ...subordinateCall(),
          outcome: fc.constantFrom("completed" as const, "stopped" as const, "failed" as const),
          result: nullable(textArb),
          reason: nullable(textArb),
        }),
      );
    case "RunCompleted":
      return ev(type, fc.record({ runId, response: textArb }));
    case "RunStopped":
      return ev(type, fc.record({ runId, by: fc.constantFrom("user" as const, "superior" as const) }));
    case "RunFailed":
      return ev(type, fc.record({ runId, reason: fc.constantFrom(...RunFailureReason.options), message: textArb }));
    case "RunInterrupted":
      return ev(type, fc.record({ runId, reason: textArb }, { requiredKeys: ["runId"] }));
    case "ContextPaused":
      return ev(type, fc.record({ runId: nullable(runId) }));
    case "ContextResumed":
      return ev(type, fc.record({ runId: nullable(runId) }));
    case "ParallelJobStarted":
      return ev(
        type,
        fc.record({
          runId,
          toolCallId: p.toolCallId,
          jobId: jid(p),
          toolName: fc.constantFrom("call_subordinate", "search"),
          arguments: jsonValueArb,
        }),
      );
    case "ParallelJobFinished":
      return ev(
        type,
        fc.record({
          runId,
          jobId: jid(p),
          status: fc.constantFrom(...JobStatus.options),
          result: nullable(textArb),
          error: nullable(textArb),
          contextId: nullable(cid(p)),
        }),
      );
    case "ApprovalRequested":
    case "ApprovalGranted":
    case "ApprovalDenied":
      return approvalEventArb(type, p.toolCallId, cid(p), rid(p));
    case "HistoryCompacted":
      return historyCompactedArb(runId, rid(p), p.toolCallId, textArb);
    case "RunControlRequested":
      return ev(
        type,
        fc.record({
          contextId: cid(p),
          runId,
          action: fc.constantFrom("stop" as const, "pause" as const, "resume" as const),
        }),
      );
    case "BudgetSet":
    case "BudgetExtended":
    case "BudgetReserved":
    case "BudgetSettled":
    case "BudgetExhausted":
    case "BudgetRestored":
      return budgetEventArb(type, cid(p), rid(p));
    case "RemoteTaskSent":
    case "RemoteTaskAccepted":
      return remoteEventArb(type, runId);
    default: {
      const _exhaustive: never = type;
      throw new Error(`no arbitrary for ${String(_exhaustive)}`);
    }
  }
};

/** A valid event of any type. */
export const domainEventArb = (p: IdPools = defaultPools): fc.Arbitrary<DomainEvent> =>
  fc.oneof(...EVENT_TYPES.map((t) => eventOfTypeArb(t, p)));
