// The approval routes over real HTTP: list the pending calls, approve or reject one, and every refusal's status.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { waitFor } from "xstate";
import { defineTool } from "../../src/tools/defineTool.ts";
import { api, served, type Served } from "./support.ts";

let s: Served;
const deploy = defineTool({ name: "deploy", description: "deploys", input: z.object({ env: z.string() }), run: ({ env }) => `deployed to ${env}` });

beforeAll(async () => {
  s = await served(
    (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === "user") return { toolCalls: [{ id: "c1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
      return { text: `done: ${last.content as string}` };
    },
    {},
    { tools: [deploy], approvals: { tools: ["deploy"] }, limits: { passivateAfterMs: 60_000 } },
  );
});
afterAll(async () => s.close());

/** Starts a run on a new context and resolves once it is parked, with the context id and its approval. */
const parkedRun = async () => {
  const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id as string;
  expect((await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "ship it" })).status).toBe(202);
  await waitFor(s.rt.actor(id)!, (x) => x.matches({ running: "parked" }), { timeout: 10_000 });
  const listed = await api(s.url, "GET", `/v1/approvals?contextId=${id}`);
  expect(listed.status).toBe(200);
  expect(listed.body.approvals).toHaveLength(1);
  return { id, approval: listed.body.approvals[0] as { approvalId: string; tool: string; status: string } };
};

const ended = (id: string) => waitFor(s.rt.actor(id)!, (x) => !x.matches("running"), { timeout: 10_000 });

describe("given a served runtime whose deploy calls need approval", () => {
  it("when a call is approved over HTTP, then the run goes on and a second decision is a 409", async () => {
    const { id, approval } = await parkedRun();
    expect(approval).toMatchObject({ tool: "deploy", status: "pending" });
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body).toMatchObject({ status: "running", awaitingApproval: [approval.approvalId] });
    const ok = await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/approve`, { by: "alice", note: "fine" });
    expect(ok).toMatchObject({ status: 200, body: { approvalId: approval.approvalId, status: "granted" } });
    await ended(id);
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body.lastRun).toMatchObject({ status: "completed", response: "done: deployed to prod" });
    const again = await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/reject`, { by: "bob", reason: "late" });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/already granted/);
  });

  it("when a call is rejected over HTTP, then the model gets the reason", async () => {
    const { id, approval } = await parkedRun();
    expect((await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/reject`, { by: "bob", reason: "change freeze" })).status).toBe(200);
    await ended(id);
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body.lastRun.response).toBe("done: Not run: bob denied this call: change freeze");
  });

  it("when a decision is malformed or names no pending call, then it is refused with its status and nothing is written", async () => {
    const { id, approval } = await parkedRun();
    const before = (await s.rt.events({ after: 0, limit: 100_000 })).length;
    const cases: [string, unknown, number, RegExp][] = [
      ["/v1/approvals/not-an-id/approve", { by: "alice" }, 400, /approval id/],
      [`/v1/approvals/${approval.approvalId}/approve`, {}, 400, /^by: /],
      [`/v1/approvals/${approval.approvalId}/approve`, { by: "" }, 400, /^by: /],
      [`/v1/approvals/${approval.approvalId}/reject`, { by: "bob" }, 400, /^reason: /],
      [`/v1/approvals/${approval.approvalId}/approve`, { by: "alice", extra: 1 }, 400, /unknown field 'extra'/],
      ["/v1/approvals/00000000-0000-4000-8000-000000000000/approve", { by: "alice" }, 404, /No approval/],
    ];
    for (const [path, body, status, message] of cases) {
      const r = await api(s.url, "POST", path, body);
      expect([path, r.status]).toEqual([path, status]);
      expect(r.body.error.message).toMatch(message);
    }
    expect((await api(s.url, "GET", "/v1/approvals?contextId=nope")).status).toBe(400);
    expect((await s.rt.events({ after: 0, limit: 100_000 })).length).toBe(before);
    await api(s.url, "POST", `/v1/contexts/${id}/stop`);
    await ended(id);
    expect((await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/approve`, { by: "alice" })).status).toBe(409);
  });
});
