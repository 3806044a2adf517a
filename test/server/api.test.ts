// The HTTP API end to end over real HTTP: each route, each error status, auth, and that bad input writes nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serve } from "../../src/index.ts";
import { call, isFirstStep, last } from "../delegation/support.ts";
import { api, gate, served, type Served } from "./support.ts";

let s: Served;
let held = gate();

beforeAll(async () => {
  s = await served(async (req) => {
    const text = String(last(req).content);
    if (req.agentNumber === 0 && !isFirstStep(req)) return { text: "A0 done" };
    if (req.agentNumber === 0 && text.includes("delegate")) return call("call_subordinate", { message: "help" });
    if (text.includes("hold")) await held.opened;
    return { text: `echo: ${text}` };
  });
});
afterAll(async () => s.close());

const head = async () => (await s.rt.events({ after: 0, limit: 100_000 })).length;

describe("given a served runtime", () => {
  it("when a context is created, read, listed and messaged with wait, then each route answers with the runtime's view", async () => {
    const created = await api(s.url, "POST", "/v1/contexts", { name: "boss" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "boss", status: "idle", depth: 0 });
    const id = created.body.id as string;

    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body.id).toBe(id);
    const done = await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "delegate please", wait: true });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: "completed", response: "A0 done", contextId: id });

    const kids = await api(s.url, "GET", `/v1/contexts/${id}/children`);
    expect(kids.body.children).toHaveLength(1);
    expect(kids.body.children[0]).toMatchObject({ parentContextId: id, depth: 1 });
    const history = await api(s.url, "GET", `/v1/contexts/${id}/history`);
    expect(JSON.stringify(history.body.history)).toContain("delegate please");

    const byRoot = await api(s.url, "GET", `/v1/contexts?root=${id}`);
    expect(byRoot.body.contexts.map((c: any) => c.id).sort()).toEqual([id, kids.body.children[0].id].sort());
    const idle = await api(s.url, "GET", `/v1/contexts?status=idle&root=${id}`);
    expect(idle.body.contexts.every((c: any) => c.status === "idle")).toBe(true);

    const page = await api(s.url, "GET", `/v1/events?contextId=${id}&limit=2`);
    expect(page.body.events).toHaveLength(2);
    expect(page.body.events[0].type).toBe("ContextCreated");
    const after = await api(s.url, "GET", `/v1/events?after=${page.body.next}&limit=3`);
    expect(after.body.events[0].globalPosition).toBeGreaterThan(page.body.next);

    // A client paging until next is null ends, having seen the whole log once, as rt.eventsPage() pages it.
    const seen: number[] = [];
    let cursor: number | null = 0;
    for (let pages = 0; cursor !== null; pages++) {
      expect(pages, "paging did not end").toBeLessThan(100);
      const got: { body: { events: { globalPosition: number }[]; next: number | null } } = await api(
        s.url,
        "GET",
        `/v1/events?after=${cursor}&limit=2`,
      );
      seen.push(...got.body.events.map((e) => e.globalPosition));
      cursor = got.body.next;
    }
    const all = (await s.rt.events()).map((e) => e.globalPosition);
    expect(seen).toEqual(all);
    expect((await api(s.url, "GET", `/v1/events?after=${all.at(-1)}`)).body).toEqual({ events: [], next: null });
    expect((await api(s.url, "GET", `/v1/events?after=0&limit=2`)).body.next).toBe(
      (await s.rt.eventsPage({ limit: 2 })).next,
    );
  });

  it("when a message is sent without wait, then it answers 202 with the run id and the run can be stopped (409 after)", async () => {
    held = gate();
    const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id;
    const accepted = await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "hold on" });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ contextId: id, intervention: false });
    const runId = accepted.body.runId;
    expect((await api(s.url, "GET", `/v1/contexts/${id}`)).body).toMatchObject({
      status: "running",
      currentRunId: runId,
    });

    const intervened = await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: "also this" });
    expect(intervened.body).toEqual({ contextId: id, runId, intervention: true });

    const paused = await api(s.url, "POST", `/v1/contexts/${id}/pause`);
    expect(paused.body.paused).toBe(true);
    expect((await api(s.url, "POST", `/v1/contexts/${id}/resume`)).body.paused).toBe(false);

    const stopped = await api(s.url, "POST", `/v1/contexts/${id}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body.outcome).toMatchObject({ runId, status: "stopped" });
    const again = await api(s.url, "POST", `/v1/contexts/${id}/stop`);
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual({
      code: "conflict",
      message: `context ${id} is not running (stopped); nothing to stop`,
    });
    held.open();
  });

  it("when several messages to one context are sent at once without wait, then each 202 names the run that took that message", async () => {
    const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id;
    const texts = ["first", "second", "third", "fourth", "fifth", "sixth"];
    const answers = await Promise.all(texts.map((text) => api(s.url, "POST", `/v1/contexts/${id}/messages`, { text })));
    const events = await s.rt.events({ contextId: id });
    for (const [i, text] of texts.entries()) {
      expect(answers[i]!.status).toBe(202);
      const taken = events.find(
        (e) => (e.type === "MessageReceived" || e.type === "InterventionReceived") && e.data.text === text,
      );
      if (taken?.type !== "MessageReceived" && taken?.type !== "InterventionReceived")
        throw new Error(`no message '${text}' in the log`);
      expect({ text, runId: answers[i]!.body.runId, intervention: answers[i]!.body.intervention }).toEqual({
        text,
        runId: taken.data.runId,
        intervention: taken.type === "InterventionReceived",
      });
    }
    expect(new Set(answers.map((a) => a.body.runId)).size).toBeGreaterThan(1);
  });

  it("when requests are malformed, then each gets its status and a message naming the field, and nothing is written", async () => {
    const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id;
    const before = await head();
    const cases: [string, string, unknown, number, RegExp][] = [
      ["POST", `/v1/contexts/${id}/messages`, "{not json", 400, /^body: malformed JSON/],
      ["POST", `/v1/contexts/${id}/messages`, { text: 5 }, 400, /^text: /],
      ["POST", `/v1/contexts/${id}/messages`, { text: "   " }, 400, /^text: must be a non-empty string/],
      ["POST", `/v1/contexts/${id}/messages`, { text: "x", extra: true }, 400, /unknown field 'extra'/],
      ["POST", `/v1/contexts/${id}/messages`, { text: "x", wait: "yes" }, 400, /^wait: /],
      ["POST", `/v1/contexts/${id}/messages`, undefined, 400, /^body: a JSON object is required/],
      ["POST", "/v1/contexts", { profile: "no-such-profile" }, 400, /no-such-profile/],
      ["POST", "/v1/contexts", { colour: "red" }, 400, /unknown field 'colour'/],
      ["GET", "/v1/contexts/not-a-uuid", undefined, 400, /^id: must be a context id/],
      ["GET", "/v1/contexts?status=sleepy", undefined, 400, /^status: /],
      ["GET", "/v1/contexts?color=1", undefined, 400, /unknown field 'color'/],
      ["GET", "/v1/events?limit=-1", undefined, 400, /^limit: /],
      ["GET", "/v1/contexts/00000000-0000-4000-8000-000000000000", undefined, 404, /no context/],
      ["POST", "/v1/contexts/00000000-0000-4000-8000-000000000000/messages", { text: "hi" }, 404, /no context/],
      ["POST", "/v1/contexts/00000000-0000-4000-8000-000000000000/stop", undefined, 404, /no context/],
      ["GET", "/v1/nothing-here", undefined, 404, /no route GET \/v1\/nothing-here/],
      ["POST", `/v1/contexts/${id}/stop`, undefined, 409, /not running \(idle\)/],
      [
        "POST",
        `/v1/contexts/${id}/messages`,
        JSON.stringify({ text: "x".repeat(1024 * 1024 + 10) }),
        413,
        /over the limit/,
      ],
      ["POST", `/v1/contexts/${id}/messages`, "[1]", 400, /^body: .*expected object, received array/],
      ["POST", "/v1/contexts", "null", 400, /^body: .*expected object, received null/],
      ["POST", "/v1/contexts/xyz/messages", { text: "hi" }, 400, /^id: must be a context id/],
      ["POST", "/v1/contexts/%00/stop", undefined, 400, /^id: must be a context id/],
      ["POST", `/v1/contexts/${id}/stop`, { force: true }, 400, /unknown field 'force'/],
      ["POST", `/v1/contexts/${id}/pause`, { until: "later" }, 400, /unknown field 'until'/],
      ["POST", `/v1/contexts/${id}/resume`, "{oops", 400, /^body: malformed JSON/],
      ["POST", "/v1/contexts", { name: "n".repeat(201) }, 400, /^name: /],
      ["GET", "/v1/events?after=abc", undefined, 400, /^after: must be a log position/],
      ["GET", "/v1/events?after=1.5", undefined, 400, /^after: must be a log position/],
      ["GET", "/v1/events?limit=99999999", undefined, 400, /^limit: must be a whole number from 1 to 10000/],
      ["GET", "/v1/events/stream?contextId=zz", undefined, 400, /^contextId: must be a context id/],
      ["DELETE", "/v1/contexts", undefined, 404, /no route DELETE \/v1\/contexts/],
      ["PUT", `/v1/contexts/${id}`, {}, 404, /no route PUT/],
    ];
    for (const [method, path, body, status, message] of cases) {
      const res = await api(s.url, method, path, body);
      expect({ path, status: res.status }).toEqual({ path, status });
      expect(Object.keys(res.body)).toEqual(["error"]);
      expect(res.body.error.message).toMatch(message);
    }
    // A body streamed without a length is cut off at the limit too.
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const streamed = await fetch(`${s.url}/v1/contexts/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        pull(controller) {
          if (sent++ < 40) controller.enqueue(chunk);
          else controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    const badResume = await api(s.url, "GET", "/v1/events/stream", undefined, { "last-event-id": "yesterday" });
    expect(badResume.status).toBe(400);
    expect(badResume.body.error.message).toMatch(/^Last-Event-ID: must be a log position/);
    expect(await head()).toBe(before);
    expect((await api(s.url, "GET", "/healthz")).body.ok).toBe(true);
  });

  it("when the OpenAPI document is read, then it describes the request schemas the server enforces", async () => {
    const doc = (await api(s.url, "GET", "/v1/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/contexts", "/v1/contexts/{id}/messages", "/v1/events/stream", "/healthz"]),
    );
    const send = doc.paths["/v1/contexts/{id}/messages"].post.requestBody.content["application/json"].schema;
    expect(send).toMatchObject({ type: "object", required: ["text"], additionalProperties: false });
    expect(Object.keys(send.properties).sort()).toEqual(["budget", "text", "wait"]);
    expect(
      doc.paths["/v1/contexts/{id}/budget/extend"].post.requestBody.content["application/json"].schema.properties,
    ).toHaveProperty("totalTokens");
    const query = doc.paths["/v1/contexts"].get.parameters.map((p: any) => p.name);
    expect(query).toEqual(["status", "root"]);
  });
});

describe("given a server with a token", () => {
  let t: Served;
  beforeAll(async () => (t = await served(() => ({ text: "ok" }), { token: "s3cret" })));
  afterAll(async () => t.close());

  it("when a request has no token or a wrong one, then it gets 401; with it, 200; /healthz needs none", async () => {
    const none = await api(t.url, "GET", "/v1/contexts");
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("unauthorized");
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await api(t.url, "GET", "/v1/contexts", undefined, { authorization: "Bearer nope" })).status).toBe(401);
    expect((await api(t.url, "POST", "/v1/contexts", {}, { authorization: "Bearer nope" })).status).toBe(401);
    expect((await t.rt.contexts()).length).toBe(0);
    expect((await api(t.url, "GET", "/v1/contexts", undefined, { authorization: "Bearer s3cret" })).status).toBe(200);
    expect((await api(t.url, "GET", "/healthz")).status).toBe(200);
  });

  it("when asked to bind a non-loopback address without a token, then serve refuses before listening", async () => {
    await expect(serve(t.rt, { port: 0, host: "0.0.0.0" })).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0 without a token/,
    );
  });

  it("when the server is closing, then requests get 503", async () => {
    const other = await serve(t.rt, { port: 0 });
    let during: number | undefined;
    await other.close({
      whileDraining: async () => {
        during = (await api(other.url, "GET", "/v1/contexts").catch(() => ({ status: -1 }))).status;
      },
    });
    expect(during).toBe(503);
  });
});
