// rt.fork of a context that asked for approval: the fork's approvals are its own, so a decision names one context.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { createRuntime, type EventStore, type Runtime } from "../../src/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { parkingModel } from "./approvalScript.ts";
import { deployTool } from "../support/approvalTools.ts";
import { internalsOf } from "../../src/runtime/runtime.ts";

const ran: string[] = [];
const deploy = deployTool((env) => void ran.push(`deploy ${env}`));

let store: EventStore;
let rt: Runtime;
/** The context parked, forked, then approved by the first test. */
let sourceId: string;
beforeAll(async () => {
  store = await freshPgliteStore();
  rt = await createRuntime({ store, model: parkingModel(), tools: [deploy], limits: { passivateAfterMs: 60_000 } });
});
afterAll(async () => {
  await rt.close();
  await store.close();
});

const APPROVAL_FACTS = new Set(["ApprovalRequested", "ApprovalGranted", "ApprovalDenied"]);
/** The approval facts of a stream, as [type, approvalId] pairs. */
const approvalIdsIn = async (id: string) =>
  (await store.readStream(id))
    .filter((e) => APPROVAL_FACTS.has(e.type))
    .map((e) => [e.type, (e.data as { approvalId: string }).approvalId]);
const approvalsOf = async (id: string) => {
  const { projections } = internalsOf(rt);
  await projections.catchUp();
  return (await projections.approvals.of([id]))[0]?.approvals ?? [];
};
const lastPosition = async (id: string) => (await store.readStream(id)).at(-1)!.globalPosition;

describe("when a context parked on an approval is forked at its last event", () => {
  it("gives the fork approval ids of its own, and approving the source's id decides the source's approval only", async () => {
    const source = await rt.createContext({ name: "shipper" });
    sourceId = source.id;
    const started = await rt.start(source.id, "ship it");
    await waitFor(rt.actor(source.id)!, (s) => s.matches({ running: "parked" }), { timeout: 10_000 });
    const [pending] = await rt.approvals({ contextId: source.id });

    const fork = await rt.fork(source.id, { at: await lastPosition(source.id) });

    const [copy, ...more] = await approvalsOf(fork.id);
    expect(more).toEqual([]);
    expect(copy!.approvalId).not.toBe(pending!.approvalId);
    // The fork's request names the fork and is closed by the run the cut left open.
    expect(copy).toMatchObject({
      contextId: fork.id,
      toolCallId: "c_deploy",
      status: "closed",
      closedBy: "interrupted",
    });
    expect(await approvalIdsIn(fork.id)).toEqual([["ApprovalRequested", copy!.approvalId]]);
    expect(await rt.context(fork.id)).toMatchObject({ status: "failed", awaitingApproval: [] });
    expect(await rt.approvals()).toEqual([pending]);
    const forkBefore = await store.readStream(fork.id);

    await rt.approve(pending!.approvalId, { by: "alice" });
    expect(await started.ended).toMatchObject({ status: "completed", response: "done: deployed to prod" });
    expect(ran).toEqual(["deploy prod"]);
    expect(await approvalsOf(source.id)).toMatchObject([
      { approvalId: pending!.approvalId, contextId: source.id, status: "granted", by: "alice" },
    ]);
    expect(await store.readStream(fork.id)).toEqual(forkBefore);
    expect(await approvalsOf(fork.id)).toEqual([copy]);
  });
});

describe("when a context whose approval was decided is forked after the decision", () => {
  it("renames the id in the request and the decision alike, so the fork's approval reads as decided", async () => {
    const completed = (await store.readStream(sourceId)).find((e) => e.type === "RunCompleted")!;
    const fork = await rt.fork(sourceId, { at: completed.globalPosition });
    const sourceIds = new Set((await approvalIdsIn(sourceId)).map(([, id]) => id));
    const forkIds = await approvalIdsIn(fork.id);
    expect(forkIds.map(([type]) => type)).toEqual(["ApprovalRequested", "ApprovalGranted"]);
    expect(new Set(forkIds.map(([, id]) => id)).size).toBe(1);
    expect(sourceIds.has(forkIds[0]![1]!)).toBe(false);
    expect(await approvalsOf(fork.id)).toMatchObject([
      { approvalId: forkIds[0]![1], contextId: fork.id, status: "granted", by: "alice" },
    ]);
  });
});

describe("after forks of contexts that asked for approval", () => {
  it("the log verifies and the projections equal a rebuild", async () => {
    expect((await store.verify()).problems).toEqual([]);
    expect((await internalsOf(rt).projections.verify()).mismatches).toEqual([]);
  });
});
