// The runtime driving the real `openai` client over HTTP against a local OpenAI-compatible server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { openAIModel } from "../../src/models/openai.ts";
import type { EventStore } from "../../src/events/store.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";

const API_KEY = "sk-test-secret-key-0123456789";
let store: EventStore;
let server: FakeOpenAIServer;
let rt: Runtime;

beforeAll(async () => {
  store = await freshPgliteStore();
  server = await startFakeOpenAIServer();
  rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: API_KEY, baseURL: server.baseURL, model: "test-model" }),
    presets: { Default: { model: "test-model" } },
    limits: { modelRetries: 2, retryBaseMs: 5, retryMaxMs: 50 },
  });
});
afterAll(async () => {
  await rt.close();
  await server.close();
  await store.close();
});

describe("when the model answers with tool calls over HTTP", () => {
  it("runs them and sends their results back in the next request, with the tools as JSON schema", async () => {
    server.reply({
      toolCalls: [{ id: "call_1", name: "response", arguments: '{"text":"from the real client"}' }],
      usage: { inputTokens: 12, outputTokens: 4 },
    });
    const ctx = await rt.createContext();
    const r = await rt.send(ctx.id, "answer via the tool");
    expect(r).toMatchObject({ status: "completed", response: "from the real client" });
    const body = server.requests.at(-1)!.body;
    expect(body.model).toBe("test-model");
    expect(body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(
      expect.arrayContaining(["response", "call_subordinate", "parallel"]),
    );
    expect(body.messages.at(-1)).toEqual({ role: "user", content: "answer via the tool" });
    expect((await rt.usage(ctx.id)).own).toMatchObject({ inputTokens: 12, outputTokens: 4 });
  });
});

describe("when the server says 429 and then answers", () => {
  it("retries after the Retry-After delay, records the failed attempt, and completes", async () => {
    server.reply({ status: 429, headers: { "retry-after-ms": "20" } }, { text: "after the rate limit" });
    const ctx = await rt.createContext();
    const r = await rt.send(ctx.id, "go");
    expect(r).toMatchObject({ status: "completed", response: "after the rate limit" });
    const failed = (await rt.events({ contextId: ctx.id })).filter((e) => e.type === "ModelCallFailed");
    expect(failed.map((e) => e.data)).toMatchObject([
      { attempt: 1, reason: "rate_limited", retryable: true, retryInMs: 20 },
    ]);
  });
});

describe("when the server keeps failing with 500", () => {
  it("exhausts the retries, fails the run with the reason, and never writes the API key to the log", async () => {
    server.reply({ status: 500, message: `upstream broke (key ${API_KEY})` }, { status: 500 }, { status: 500 });
    const ctx = await rt.createContext();
    const r = await rt.send(ctx.id, "go");
    expect(r).toMatchObject({ status: "failed", failure: { reason: "model_error" } });
    const events = await rt.events({ contextId: ctx.id });
    expect(
      events.filter((e) => e.type === "ModelCallFailed").map((e) => (e.data as { reason: string }).reason),
    ).toEqual(["server_error", "server_error", "server_error"]);
    const { rows } = await store.sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE data::text LIKE $1 OR metadata::text LIKE $1",
      [`%${API_KEY}%`],
    );
    expect(rows[0]!.n).toBe(0);
  });
});

describe("when the run is stopped while the HTTP request is in flight", () => {
  it("aborts the request (the server sees the client hang up) and records the aborted call", async () => {
    server.reply({ hang: true });
    const ctx = await rt.createContext();
    const before = server.requests.length;
    const running = rt.send(ctx.id, "a slow question");
    const seen = await server.waitForRequest(before);
    await rt.stop(ctx.id);
    expect(await running).toMatchObject({ status: "stopped" });
    expect(await seen.closed).toBe(true);
    const aborted = (await rt.events({ contextId: ctx.id })).find((e) => e.type === "ModelCallFailed");
    expect(aborted?.data).toMatchObject({ reason: "aborted" });
  });
});
