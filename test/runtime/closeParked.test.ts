// Closing the runtime while a run is parked awaiting approval: every waiter on a run's end settles (none
// hangs), a parked run's waiters with a RuntimeError "closed", and the run stays parked in the log for a
// later runtime to decide. Each test has a short timeout: before the fix, the waiters hung.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { freshPgliteStore } from "../support/pglite.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, RuntimeError, type Runtime } from "../../src/runtime/runtime.ts";
import { scriptedModel, type ScriptedHandler } from "../../src/models/scripted.ts";
import { deployTool } from "../support/approvalTools.ts";

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store.close();
});

const deploy = deployTool();

/** "deploy": the deploy call (which waits for approval), "delegate": the same through a subordinate; then the last tool result. */
const script: ScriptedHandler = (req) => {
  const result = req.messages.findLast((m) => m.role === "tool");
  if (result) return { text: `done: ${result.content as string}` };
  if (req.messages.find((m) => m.role === "user")!.content === "delegate") {
    return {
      toolCalls: [
        { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "deploy", reset: true }) },
      ],
    };
  }
  return { toolCalls: [{ id: "k1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
};

const open = (): Promise<Runtime> =>
  createRuntime({ store, model: scriptedModel(script), tools: [deploy], limits: { passivateAfterMs: 60_000 } });

const parked = (rt: Runtime, id: string) =>
  waitFor(rt.actor(id)!, (s) => s.matches({ running: "parked" }), { timeout: 5_000 });
const typesOf = async (id: string) => (await store.readStream(id)).map((e) => e.type);

/** The context that records the next ApprovalRequested, and the approval's id. */
const nextApproval = async (rt: Runtime) => {
  const head = await store.headPosition();
  return new Promise<{ contextId: string; approvalId: string }>((resolve) => {
    void rt.subscribe(
      (e) => e.type === "ApprovalRequested" && resolve({ contextId: e.streamId, approvalId: e.data.approvalId }),
      { after: head },
    );
  });
};

describe("when the runtime closes while a run is parked awaiting approval", () => {
  it(
    "rejects the root's send as closed, naming the context and the approval; the run stays parked and a new runtime approves it to completion",
    { timeout: 10_000 },
    async () => {
      const first = await open();
      const root = await first.createContext();
      const requested = nextApproval(first);
      const sent = first.send(root.id, "deploy");
      const { contextId, approvalId } = await requested;
      expect(contextId).toBe(root.id);
      await parked(first, root.id);
      // A message to the parked run joins it; its caller lets `ended` go, which a close must not turn into an unhandled rejection.
      expect(await first.start(root.id, "hurry")).toMatchObject({ intervention: true });
      await first.close();

      const refused = await sent.then(
        () => null,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(RuntimeError);
      expect(refused).toMatchObject({ reason: "closed" });
      const message = (refused as RuntimeError).message;
      expect(message).toMatch(/closed while .*parked awaiting approval/);
      expect(message).toContain(root.id);
      expect(message).toContain(approvalId);
      expect(message).toMatch(/stays parked in the log/);
      // Close wrote nothing for the parked run.
      expect((await typesOf(root.id)).at(-1)).toBe("InterventionReceived");

      const second = await open();
      expect(await second.context(root.id)).toMatchObject({ status: "running", awaitingApproval: [approvalId] });
      await second.approve(approvalId, { by: "alice" });
      await waitFor(second.actor(root.id)!, (s) => !s.matches("running"), { timeout: 5_000 });
      expect(await second.context(root.id)).toMatchObject({ status: "idle", awaitingApproval: [] });
      const end = (await store.readStream(root.id)).at(-1)!;
      expect(end).toMatchObject({ type: "RunCompleted", data: { response: "done: deployed to prod" } });
      await second.close();
    },
  );

  it(
    "when the parked run is a subordinate, then the root's send settles as interrupted (its run was in flight), a waiter on the child's run is rejected as closed, and close writes nothing for the child",
    { timeout: 10_000 },
    async () => {
      const first = await open();
      const root = await first.createContext();
      const requested = nextApproval(first);
      const sent = first.send(root.id, "delegate");
      const { contextId: child } = await requested;
      expect(child).not.toBe(root.id);
      await parked(first, child);
      const intervened = await first.start(child, "hurry");
      expect(intervened).toMatchObject({ intervention: true });
      await first.close();

      // The root's run was in flight: close records it as interrupted, as for any run in flight.
      expect(await sent).toMatchObject({ contextId: root.id, status: "failed", failure: { reason: "interrupted" } });
      expect((await typesOf(root.id)).at(-1)).toBe("RunInterrupted");
      await expect(intervened.ended).rejects.toMatchObject({
        reason: "closed",
        message: expect.stringContaining(`context '${child}' was parked awaiting approval`),
      });
      expect((await typesOf(child)).at(-1)).toBe("InterventionReceived");
    },
  );
});
