// The OpenAI adapter streaming: the real `openai` client against a local endpoint that sends server-sent chunks.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openAIModel } from "../../src/models/openai.ts";
import { ModelError, type ModelDelta, type ModelRequest } from "../../src/models/port.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";

const API_KEY = "sk-test-STREAM-0123456789";

const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
  contextId: "ctx-1",
  agentNumber: 0,
  profile: "default",
  model: "test-model",
  messages: [{ role: "user", content: "Say hi." }],
  tools: [],
  signal: new AbortController().signal,
  ...overrides,
});

const failure = async (promise: Promise<unknown>): Promise<ModelError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
};

let server: FakeOpenAIServer;
beforeEach(async () => {
  server = await startFakeOpenAIServer();
});
afterEach(async () => {
  await server.close();
});

describe("given a request with an onDelta listener", () => {
  it("streams: the listener sees the text piece by piece and the turn holds the whole text with the final chunk's usage", async () => {
    server.reply({ text: "hello streaming world", chunkSize: 4, usage: { inputTokens: 21, outputTokens: 5 } });
    const deltas: ModelDelta[] = [];

    const turn = await openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(
      request({ onDelta: (d) => deltas.push(d) }),
    );

    expect(turn).toEqual({ text: "hello streaming world", usage: { inputTokens: 21, outputTokens: 5 } });
    expect(deltas.length).toBe(Math.ceil("hello streaming world".length / 4));
    expect(deltas.map((d) => (d.kind === "text" ? d.text : "")).join("")).toBe("hello streaming world");
    expect(server.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("assembles tool calls from their deltas, in index order, with arguments exactly as sent", async () => {
    const first = '{"message":"research X","reset":true}';
    const second = '{"text": "unterminated'; // not valid JSON: still returned as is
    server.reply({
      chunkSize: 5,
      toolCalls: [
        { id: "call_a", name: "call_subordinate", arguments: first },
        { id: "call_b", name: "response", arguments: second },
      ],
    });
    const deltas: ModelDelta[] = [];

    const turn = await openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(
      request({ onDelta: (d) => deltas.push(d) }),
    );

    expect(turn.text).toBeNull();
    expect(turn.toolCalls).toEqual([
      { id: "call_a", name: "call_subordinate", arguments: first },
      { id: "call_b", name: "response", arguments: second },
    ]);
    const argsOf = (index: number) =>
      deltas
        .filter((d) => d.kind === "tool_call" && d.index === index)
        .map((d) => (d.kind === "tool_call" ? d.arguments : ""))
        .join("");
    expect(argsOf(0)).toBe(first);
    expect(argsOf(1)).toBe(second);
  });

  it("keeps streaming when the listener throws", async () => {
    server.reply({ text: "still whole" });
    const turn = await openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(
      request({
        onDelta: () => {
          throw new Error("listener bug");
        },
      }),
    );
    expect(turn.text).toBe("still whole");
  });
});

describe("given the stream option", () => {
  it("streams with stream: true even without a listener", async () => {
    server.reply({ text: "streamed anyway", usage: { inputTokens: 1, outputTokens: 2 } });
    const turn = await openAIModel({ apiKey: API_KEY, baseURL: server.baseURL, stream: true }).call(request());
    expect(turn).toEqual({ text: "streamed anyway", usage: { inputTokens: 1, outputTokens: 2 } });
    expect(server.requests[0]?.body.stream).toBe(true);
  });

  it("never streams with stream: false, and never calls the listener", async () => {
    server.reply({ text: "one JSON body" });
    const deltas: ModelDelta[] = [];
    const turn = await openAIModel({ apiKey: API_KEY, baseURL: server.baseURL, stream: false }).call(
      request({ onDelta: (d) => deltas.push(d) }),
    );
    expect(turn.text).toBe("one JSON body");
    expect(server.requests[0]?.body.stream).toBeFalsy();
    expect(deltas).toEqual([]);
  });
});

describe("when the stream breaks", () => {
  it("fails with a retryable connection error when the connection drops mid-stream, returning nothing partial", async () => {
    server.reply({ text: "this reply is cut in the middle", chunkSize: 2, dropAfterChunks: 4 });
    const deltas: ModelDelta[] = [];

    const error = await failure(
      openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request({ onDelta: (d) => deltas.push(d) })),
    );

    expect(error).toMatchObject({ reason: "connection", retryable: true });
    expect(deltas.length).toBeGreaterThan(0);
  });

  it("fails with a retryable connection error when the body ends before any finish reason", async () => {
    server.reply({
      raw: 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}\n\n',
      contentType: "text/event-stream",
    });
    const error = await failure(
      openAIModel({ apiKey: API_KEY, baseURL: server.baseURL, stream: true }).call(request()),
    );
    expect(error).toMatchObject({ reason: "connection", retryable: true });
  });

  it("aborts the HTTP exchange when stopped mid-stream and fails with aborted, not a partial reply", async () => {
    server.reply({ text: "a long answer that never finishes", chunkSize: 3, hangAfterChunks: 3 });
    const controller = new AbortController();
    let firstDelta!: () => void;
    const streaming = new Promise<void>((resolve) => (firstDelta = resolve));

    const call = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(
      request({ signal: controller.signal, onDelta: () => firstDelta() }),
    );
    await streaming;
    controller.abort();

    const error = await failure(call);
    expect(error).toMatchObject({ reason: "aborted", retryable: false });
    expect(await server.requests[0]?.closed).toBe(true);
  }, 5_000);
});
