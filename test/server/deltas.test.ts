// `serve` forwards live model deltas on its event stream: the real `openai` client streaming from a local server,
// each delta an `event: ModelDelta` without an id, so a client's Last-Event-ID still names a stored event.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, openAIModel, serve, type Runtime, type ServerHandle } from "../../src/index.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";
import { api, sse } from "./support.ts";

let store: FreshPgliteStore;
let model: FakeOpenAIServer;
let rt: Runtime;
let server: ServerHandle;
beforeAll(async () => {
  store = await freshPgliteStore();
  model = await startFakeOpenAIServer();
  rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-test-serve-0123456789", baseURL: model.baseURL, model: "test-model" }),
    presets: { Default: { model: "test-model" } },
  });
  server = await serve(rt, { port: 0 });
});
afterAll(async () => {
  await server.close({ whileDraining: () => rt.close() });
  await model.close();
  await store.close();
});

describe("given a client on the event stream while a model streams its reply", () => {
  it("gets the deltas as ModelDelta events without an id, between the call's stored events, and resumes by stored ids only", async () => {
    model.reply({ text: "streamed over sse", chunkSize: 5 });
    const created = await api(server.url, "POST", "/v1/contexts", { name: "talker" });
    const id = created.body.id as string;
    const stream = await sse(`${server.url}/v1/events/stream?contextId=${id}`);

    await api(server.url, "POST", `/v1/contexts/${id}/messages`, { text: "talk" });
    const events = await stream.collect((e) => e.event === "RunCompleted");
    stream.abort();

    const deltas = events.filter((e) => e.event === "ModelDelta");
    expect(deltas.map((e) => JSON.parse(e.data).delta.text).join("")).toBe("streamed over sse");
    expect(deltas.every((e) => e.id === null)).toBe(true);
    expect(deltas.every((e) => JSON.parse(e.data).contextId === id)).toBe(true);
    const types = events.map((e) => e.event);
    expect(types.indexOf("ModelCalled")).toBeLessThan(types.indexOf("ModelReplied"));
    expect(types.lastIndexOf("ModelDelta")).toBeLessThan(types.indexOf("ModelReplied"));
    // Every event with an id is a stored one: resuming after the last id replays nothing live and skips nothing stored.
    const stored = events.filter((e) => e.id !== null);
    expect(stored.map((e) => Number(e.id))).toEqual(
      (await rt.events({ contextId: id })).map((e) => e.globalPosition).filter((p) => p > Number(stored[0]!.id) - 1),
    );
  });
});
