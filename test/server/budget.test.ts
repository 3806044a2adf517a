// A tree's budget over real HTTP: created and sent with one, read, extended (role act) so a run parked on it goes
// on; a bad budget is a 400 naming the key, and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { api, served, type Served } from "./support.ts";

const TOKENS = [
  { name: "dashboard", token: "read-secret-0123456789", role: "read" },
  { name: "ci-bot", token: "act-secret-0123456789", role: "act" },
] as const;
const bearer = (name: (typeof TOKENS)[number]["name"]) => ({
  authorization: `Bearer ${TOKENS.find((t) => t.name === name)!.token}`,
});

let s: Served;
beforeAll(async () => {
  // Each reply reports 100 input and 10 output tokens; each call reserves its counted input plus 50.
  s = await served(
    () => ({ text: "done", usage: { inputTokens: 100, outputTokens: 10 } }),
    { tokens: [...TOKENS] },
    {
      presets: { Default: { model: "gpt-4o-mini", maxOutputTokens: 50 } },
      limits: { passivateAfterMs: 60_000 },
    },
  );
});
afterAll(async () => s.close());

const logLength = async () => (await s.rt.events()).length;

describe("given a served runtime with named tokens", { timeout: 60_000 }, () => {
  it("when a context is created or sent to with a bad budget, then it is a 400 naming the key, and nothing is written", async () => {
    const before = await logLength();
    const cases: [string, unknown, string][] = [
      ["/v1/contexts", { budget: { totalTokenz: 5 } }, "budget: unknown field 'totalTokenz'"],
      ["/v1/contexts", { budget: { totalTokens: -1 } }, "budget.totalTokens: must be a whole number, 0 or more"],
      ["/v1/contexts", { budget: { costUsd: "1" } }, "budget.costUsd: must be a number of US dollars, 0 or more"],
      ["/v1/contexts", { budget: {} }, "budget: must give at least one of inputTokens"],
    ];
    for (const [route, body, message] of cases) {
      const r = await api(s.url, "POST", route, body, bearer("ci-bot"));
      expect([r.status, r.body.error.code]).toEqual([400, "invalid_request"]);
      expect(r.body.error.message).toContain(message);
    }
    const root = (await api(s.url, "POST", "/v1/contexts", {}, bearer("ci-bot"))).body.id as string;
    const mid = await logLength();
    expect(mid).toBeGreaterThan(before);
    const send = await api(
      s.url,
      "POST",
      `/v1/contexts/${root}/messages`,
      { text: "go", budget: { modelCalls: 1.5 } },
      bearer("ci-bot"),
    );
    expect([send.status, send.body.error.message]).toEqual([
      400,
      "budget.modelCalls: must be a whole number, 0 or more",
    ]);
    const extend = await api(
      s.url,
      "POST",
      `/v1/contexts/${root}/budget/extend`,
      { totalTokens: 10, wallclockMs: 5 },
      bearer("ci-bot"),
    );
    expect([extend.status, extend.body.error.message]).toEqual([400, "body: unknown field 'wallclockMs'"]);
    expect(await logLength()).toBe(mid);
  });

  it("when a tree's run parks on its budget, then GET shows it, read may not extend, and act's extension lets it finish", async () => {
    const created = await api(
      s.url,
      "POST",
      "/v1/contexts",
      { name: "budgeted", budget: { modelCalls: 1, totalTokens: 100_000 } },
      bearer("ci-bot"),
    );
    expect(created.status).toBe(201);
    const root = created.body.id as string;
    expect((await api(s.url, "GET", `/v1/contexts/${root}/budget`, undefined, bearer("dashboard"))).body).toMatchObject(
      {
        rootContextId: root,
        limits: { modelCalls: 1, totalTokens: 100_000 },
        spent: { modelCalls: 0, totalTokens: 0 },
        parked: [],
      },
    );
    // Two messages: the first run spends the one call; the second run's call does not fit and parks.
    expect(
      (await api(s.url, "POST", `/v1/contexts/${root}/messages`, { text: "one", wait: true }, bearer("ci-bot"))).body,
    ).toMatchObject({ status: "completed" });
    const second = await api(s.url, "POST", `/v1/contexts/${root}/messages`, { text: "two" }, bearer("ci-bot"));
    expect(second.status).toBe(202);
    await waitFor(s.rt.actor(root)!, (x) => x.matches({ running: "parked" }), { timeout: 10_000 });

    const parked = await api(s.url, "GET", `/v1/contexts/${root}/budget`, undefined, bearer("dashboard"));
    expect(parked.body).toMatchObject({
      limits: { modelCalls: 1 },
      spent: { modelCalls: 1, inputTokens: 100, outputTokens: 10, totalTokens: 110 },
      parked: [{ contextId: root, runId: second.body.runId, limit: "modelCalls" }],
    });
    const view = await api(s.url, "GET", `/v1/contexts/${root}`, undefined, bearer("dashboard"));
    expect(view.body).toMatchObject({ status: "running", parkedOnBudget: { limit: "modelCalls" } });

    const refused = await api(
      s.url,
      "POST",
      `/v1/contexts/${root}/budget/extend`,
      { modelCalls: 1 },
      bearer("dashboard"),
    );
    expect([refused.status, refused.body.error.message]).toEqual([403, expect.stringContaining("role read")]);
    expect((await s.rt.budget(root)).limits).toEqual({ modelCalls: 1, totalTokens: 100_000 });

    const ended = waitFor(s.rt.actor(root)!, (x) => !x.matches("running"), { timeout: 10_000 });
    const extended = await api(
      s.url,
      "POST",
      `/v1/contexts/${root}/budget/extend`,
      { modelCalls: 2 },
      bearer("ci-bot"),
    );
    expect(extended.status).toBe(200);
    expect(extended.body).toMatchObject({ rootContextId: root, limits: { modelCalls: 3, totalTokens: 100_000 } });
    await ended;
    expect((await s.rt.context(root))!.lastRun).toMatchObject({ runId: second.body.runId, status: "completed" });
    const after = (await api(s.url, "GET", `/v1/contexts/${root}/budget`, undefined, bearer("dashboard"))).body;
    expect(after).toMatchObject({
      spent: { modelCalls: 2, totalTokens: 220 },
      reserved: { modelCalls: 0 },
      parked: [],
    });
    expect((await api(s.url, "GET", `/v1/contexts/${root}`, undefined, bearer("dashboard"))).body).toMatchObject({
      status: "idle",
      parkedOnBudget: null,
    });
  });

  it("when a message carries a budget, then it is added to what the tree spent, and any context of the tree answers for its root", async () => {
    const root = (await api(s.url, "POST", "/v1/contexts", {}, bearer("ci-bot"))).body.id as string;
    expect((await api(s.url, "GET", `/v1/contexts/${root}/budget`, undefined, bearer("dashboard"))).body).toMatchObject(
      { limits: null },
    );
    const done = await api(
      s.url,
      "POST",
      `/v1/contexts/${root}/messages`,
      { text: "go", wait: true, budget: { totalTokens: 5000 } },
      bearer("ci-bot"),
    );
    expect(done.body).toMatchObject({ status: "completed" });
    expect((await api(s.url, "GET", `/v1/contexts/${root}/budget`, undefined, bearer("dashboard"))).body).toMatchObject(
      {
        limits: { totalTokens: 5000 },
        spent: { totalTokens: 110 },
      },
    );
    const unknown = await api(
      s.url,
      "GET",
      "/v1/contexts/00000000-0000-4000-8000-000000000000/budget",
      undefined,
      bearer("dashboard"),
    );
    expect(unknown.status).toBe(404);
  });
});
