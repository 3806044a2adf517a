// Where a cut-off run picks up, read from its facts alone (src/actors/resumePlan.ts).
import { describe, expect, it } from "vitest";
import type { DomainEvent } from "../../src/events/schema.ts";
import { planResume } from "../../src/actors/resumePlan.ts";
import { logBuilder } from "../../src/testing/recorded.ts";

const RUN = "run-1" as never;
const factsOf = (...events: DomainEvent[]) => {
  const log = logBuilder();
  log.add("ctx", { type: "MessageReceived", data: { runId: RUN, text: "go", sender: "user" } });
  log.add("ctx", { type: "RunStarted", data: { runId: RUN, model: "m", superior: null } });
  for (const e of events) log.add("ctx", e);
  return log.events;
};
const called = (step: number, attempt = 1): DomainEvent => ({
  type: "ModelCalled",
  data: { runId: RUN, step, attempt, model: "m" },
});
const replied = (step: number, calls: { id: string; name: string }[], text: string | null = null): DomainEvent => ({
  type: "ModelReplied",
  data: { runId: RUN, step, text, toolCalls: calls.map((c) => ({ ...c, arguments: {} })), usage: null },
});
const toolCalled = (step: number, id: string): DomainEvent => ({
  type: "ToolCalled",
  data: { runId: RUN, step, toolCallId: id, name: "t", arguments: {} },
});
const returned = (id: string): DomainEvent => ({
  type: "ToolReturned",
  data: { runId: RUN, toolCallId: id, name: "t", result: "ok" },
});
const failedCall = (step: number, attempt: number, retryInMs: number | null): DomainEvent => ({
  type: "ModelCallFailed",
  data: {
    runId: RUN,
    step,
    attempt,
    reason: "rate_limited",
    message: "slow down",
    retryable: retryInMs !== null,
    retryInMs,
  },
});

describe("planResume", () => {
  it("when the run's first call has no reply, then that call is made again as attempt 2 of step 1", () => {
    expect(planResume(factsOf(called(1)))).toMatchObject({
      step: 1,
      reply: null,
      attempt: 2,
      repeatsModelCall: true,
      failed: null,
    });
  });

  it("when a step's reply is on the log, then it is reused, its answered calls stand and the one started without a result is listed", () => {
    const plan = planResume(
      factsOf(
        called(1),
        replied(1, [
          { id: "a", name: "t" },
          { id: "b", name: "t" },
          { id: "c", name: "t" },
        ]),
        toolCalled(1, "a"),
        returned("a"),
        toolCalled(1, "b"),
      ),
    );
    expect(plan).toMatchObject({
      step: 1,
      repeatsModelCall: false,
      reply: { text: null, calls: [{ id: "a" }, { id: "b" }, { id: "c" }] },
    });
    expect([...plan.answered]).toEqual(["a"]);
    expect([...plan.started]).toEqual(["b"]);
    expect(plan.guards.previousReply).not.toBeNull();
  });

  it("when the last attempt failed and a retry was due, then the next attempt is made, not counted as a repeat", () => {
    expect(
      planResume(
        factsOf(called(1), replied(1, [{ id: "a", name: "t" }]), returned("a"), called(2), failedCall(2, 1, 100)),
      ),
    ).toMatchObject({
      step: 2,
      reply: null,
      attempt: 2,
      repeatsModelCall: false,
      failed: { retryInMs: 100 },
    });
  });

  it("when the last attempt failed for good, then the plan says so (the loop gives up as it would have)", () => {
    expect(planResume(factsOf(called(1), failedCall(1, 1, null)))).toMatchObject({
      step: 1,
      failed: { retryable: false, retryInMs: null },
    });
  });

  it("when an intervention came after the last model call, then it is counted as undelivered", () => {
    const plan = planResume(
      factsOf(called(1), { type: "InterventionReceived", data: { runId: RUN, text: "also this" } }),
    );
    expect(plan.undelivered).toBe(1);
    expect(
      planResume(factsOf({ type: "InterventionReceived", data: { runId: RUN, text: "early" } }, called(1))).undelivered,
    ).toBe(0);
  });
});
