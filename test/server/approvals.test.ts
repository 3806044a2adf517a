// The approval routes over real HTTP: list the pending calls, approve or reject one, and every refusal's status.
import { userInfo } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { waitFor } from "xstate";
import { defineTool } from "../../src/tools/defineTool.ts";
import { api, served, type Served } from "./support.ts";

let s: Served;
const deploy = defineTool({
  name: "deploy",
  description: "deploys",
  input: z.object({ env: z.string() }),
  run: ({ env }) => `deployed to ${env}`,
});

beforeAll(async () => {
  s = await served(
    (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === "user")
        return { toolCalls: [{ id: "c1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
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
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body).toMatchObject({
      status: "running",
      awaitingApproval: [approval.approvalId],
    });
    const ok = await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/approve`, { note: "fine" });
    // No tokens: the decision is recorded under the serving process's OS user.
    expect(ok).toMatchObject({
      status: 200,
      body: { approvalId: approval.approvalId, status: "granted", by: userInfo().username },
    });
    await ended(id);
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body.lastRun).toMatchObject({
      status: "completed",
      response: "done: deployed to prod",
    });
    const again = await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/reject`, { reason: "late" });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/already granted/);
  });

  it("when a call is rejected over HTTP, then the model gets the reason", async () => {
    const { id, approval } = await parkedRun();
    expect(
      (await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/reject`, { reason: "change freeze" })).status,
    ).toBe(200);
    await ended(id);
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body.lastRun.response).toBe(
      `done: Not run: ${userInfo().username} denied this call: change freeze`,
    );
  });

  it("when a decision is malformed or names no pending call, then it is refused with its status and nothing is written", async () => {
    const { id, approval } = await parkedRun();
    const before = (await s.rt.events({ after: 0, limit: 100_000 })).length;
    const cases: [string, unknown, number, RegExp][] = [
      ["/v1/approvals/not-an-id/approve", {}, 400, /approval id/],
      // Who decides is never the body's to say.
      [
        `/v1/approvals/${approval.approvalId}/approve`,
        { by: "alice" },
        400,
        /^by: not accepted; a decision is recorded under the name of the token/,
      ],
      [`/v1/approvals/${approval.approvalId}/reject`, { by: "bob", reason: "no" }, 400, /^by: not accepted/],
      [`/v1/approvals/${approval.approvalId}/reject`, {}, 400, /^reason: /],
      [`/v1/approvals/${approval.approvalId}/approve`, { extra: 1 }, 400, /unknown field 'extra'/],
      ["/v1/approvals/00000000-0000-4000-8000-000000000000/approve", {}, 404, /No approval/],
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
    expect((await api(s.url, "POST", `/v1/approvals/${approval.approvalId}/approve`, {})).status).toBe(409);
  });
});
