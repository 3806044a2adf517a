// Streamed model output through the runtime: the real `openai` client against a local server that streams chunked
// SSE; live deltas reach `rt.subscribe` listeners that ask for them, and the log keeps one ModelReplied per call.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createRuntime,
  isLiveDelta,
  openAIModel,
  type EventStore,
  type LiveDelta,
  type LiveEvent,
  type Runtime,
} from "../../src/index.ts";
import { eventually } from "../support/async.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";

let store: EventStore;
let server: FakeOpenAIServer;
let rt: Runtime;
const unsubscribes: (() => void)[] = [];

beforeAll(async () => {
  store = await freshPgliteStore();
  server = await startFakeOpenAIServer();
  rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-test-stream-0123456789", baseURL: server.baseURL, model: "test-model" }),
    presets: { Default: { model: "test-model" } },
    limits: { modelRetries: 2, retryBaseMs: 5, retryMaxMs: 50 },
  });
});
afterEach(() => unsubscribes.splice(0).forEach((u) => u()));
afterAll(async () => {
  await rt.close();
  await server.close();
  await store.close();
});

/** Everything a listener with deltas receives, and a promise for the n-th delta. */
const listen = async () => {
  const received: LiveEvent[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  unsubscribes.push(
    await rt.subscribe(
      (e) => {
        received.push(e);
        const count = received.filter(isLiveDelta).length;
        for (const w of waiters.filter((w) => w.n <= count)) w.resolve();
      },
      { deltas: true },
    ),
  );
  const deltas = () => received.filter(isLiveDelta);
  return {
    received,
    deltas,
    nthDelta: (n: number) =>
      deltas().length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  };
};
const textOf = (deltas: LiveDelta[]) => deltas.map((d) => (d.delta.kind === "text" ? d.delta.text : "")).join("");
const storedUntil = (id: string, type: string) =>
  eventually(
    async () => {
      const events = await rt.events({ contextId: id });
      return events.some((e) => e.type === type) ? events : undefined;
    },
    10_000,
    `${type} in the log`,
  );

describe("given a listener that asks for deltas", () => {
  it("gets the reply piece by piece, told apart from stored events, while the log stores the whole reply once", async () => {
    server.reply({ text: "hello streaming world", chunkSize: 4, usage: { inputTokens: 9, outputTokens: 3 } });
    const live = await listen();
    const ctx = await rt.createContext();

    const outcome = await rt.send(ctx.id, "say it");

    expect(outcome).toMatchObject({ status: "completed", response: "hello streaming world" });
    expect(server.requests.at(-1)!.body).toMatchObject({ stream: true });
    const deltas = live.deltas();
    expect(deltas.length).toBe(Math.ceil("hello streaming world".length / 4));
    expect(textOf(deltas)).toBe("hello streaming world");
    const stored = await rt.events({ contextId: ctx.id });
    const runId = stored.find((e) => e.type === "RunStarted")!.data.runId;
    expect(
      deltas.every((d) => d.contextId === ctx.id && d.runId === runId && d.step === 1 && d.attempt === 1 && d.live),
    ).toBe(true);
    expect(deltas.every((d) => !("globalPosition" in d))).toBe(true);
    // Stored: one ModelReplied with the whole text; no delta ever reaches the log.
    expect(stored.filter((e) => e.type === "ModelReplied").map((e) => e.data.text)).toEqual(["hello streaming world"]);
    expect(stored.some((e) => (e.type as string) === "ModelDelta")).toBe(false);
    await storedUntil(ctx.id, "RunCompleted");
    await eventually(
      () => live.received.some((e) => !isLiveDelta(e) && e.type === "RunCompleted" && e.streamId === ctx.id),
      10_000,
      "RunCompleted at the listener",
    );
    // The call's reply reaches the listener after its last delta.
    const replied = live.received.findIndex(
      (e) => !isLiveDelta(e) && e.type === "ModelReplied" && e.streamId === ctx.id,
    );
    expect(replied).toBeGreaterThan(live.received.lastIndexOf(deltas.at(-1)!));
  });

  it("aborts the stream on a stop, and stores nothing partial as a reply", async () => {
    server.reply({ text: "this reply never finishes", chunkSize: 3, hangAfterChunks: 3 });
    const live = await listen();
    const ctx = await rt.createContext();

    const sent = rt.send(ctx.id, "start talking");
    await live.nthDelta(2);
    await rt.stop(ctx.id);
    const outcome = await sent;

    expect(outcome.status).toBe("stopped");
    expect(textOf(live.deltas())).toBe("this r"); // two chunks of three characters, then nothing
    expect(await server.requests.at(-1)!.closed).toBe(true); // the client hung up
    const stored = await rt.events({ contextId: ctx.id });
    expect(stored.some((e) => e.type === "ModelReplied")).toBe(false);
    expect(stored.filter((e) => e.type === "ModelCallFailed").map((e) => e.data)).toMatchObject([
      { reason: "aborted", retryable: false },
    ]);
  });

  it("retries a stream dropped midway as a model error; the deltas say which attempt they belong to", async () => {
    server.reply({ text: "first try", chunkSize: 2, dropAfterChunks: 3 }, { text: "second try", chunkSize: 20 });
    const live = await listen();
    const ctx = await rt.createContext();

    const outcome = await rt.send(ctx.id, "go");

    expect(outcome).toMatchObject({ status: "completed", response: "second try" });
    const stored = await rt.events({ contextId: ctx.id });
    expect(stored.filter((e) => e.type === "ModelCallFailed").map((e) => e.data)).toMatchObject([
      { attempt: 1, reason: "connection", retryable: true },
    ]);
    expect(stored.filter((e) => e.type === "ModelReplied").map((e) => e.data.text)).toEqual(["second try"]);
    expect(textOf(live.deltas().filter((d) => d.attempt === 1))).toBe("firs");
    expect(textOf(live.deltas().filter((d) => d.attempt === 2))).toBe("second try");
  });
});

describe("given no listener that asks for deltas", () => {
  it("does not ask the endpoint to stream, and a plain listener never sees a delta", async () => {
    server.reply({ text: "plain" });
    const plain: unknown[] = [];
    unsubscribes.push(await rt.subscribe((e) => plain.push(e)));
    const ctx = await rt.createContext();

    await rt.send(ctx.id, "go");
    await storedUntil(ctx.id, "RunCompleted");

    expect(server.requests.at(-1)!.body.stream).toBeUndefined();
    expect(plain.some((e) => (e as { type: string }).type === "ModelDelta")).toBe(false);
  });
});
