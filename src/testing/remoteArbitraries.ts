// fast-check arbitraries for a remote subordinate's facts: valid RemoteTaskSent and RemoteTaskAccepted data.
import fc from "fast-check";
import type { RunId } from "../events/ids.ts";
import type { DomainEvent } from "../events/schema.ts";

/** One valid remote-task fact of `type` for a run drawn from `runId`. */
export const remoteEventArb = (
  type: "RemoteTaskSent" | "RemoteTaskAccepted",
  runId: fc.Arbitrary<RunId>,
): fc.Arbitrary<DomainEvent> =>
  type === "RemoteTaskSent"
    ? fc
        .record({
          runId,
          url: fc.constantFrom("http://127.0.0.1:7077", "https://agents.example/a2a"),
          skill: fc.option(fc.constantFrom("researcher"), { nil: null }),
          messageId: fc.uuid(),
          remoteContextId: fc.option(fc.uuid(), { nil: null }),
        })
        .map((data) => ({ type, data }))
    : fc
        .record({
          runId,
          taskId: fc.uuid(),
          remoteContextId: fc.uuid(),
          state: fc.constantFrom("working", "completed"),
        })
        .map((data) => ({ type, data }));
