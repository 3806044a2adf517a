// The OpenAI adapter with the real `openai` client over HTTP, against a local fake endpoint.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openAIModel } from "../../src/models/openai.ts";
import { ModelError, type ModelRequest } from "../../src/models/port.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";

const API_KEY = "sk-test-SECRET-0123456789";

const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
  contextId: "ctx-1",
  agentNumber: 0,
  profile: "default",
  model: "test-model",
  messages: [
    { role: "system", content: "You are A0." },
    { role: "user", content: "Say hi." },
  ],
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

describe("given an endpoint that answers", () => {
  it("returns the text reply with its usage", async () => {
    server.reply({ text: "hi there", usage: { inputTokens: 12, outputTokens: 3 } });
    const model = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL });

    const turn = await model.call(request());

    expect(turn).toEqual({ text: "hi there", usage: { inputTokens: 12, outputTokens: 3 } });
  });

  it("returns tool calls with the argument strings exactly as the model sent them", async () => {
    const notJson = '{"message": "go", '; // truncated by the model: still returned as is
    server.reply({
      toolCalls: [
        { id: "call_a", name: "call_subordinate", arguments: '{"message":"research X","reset":"true"}' },
        { id: "call_b", name: "response", arguments: notJson },
      ],
    });
    const model = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL });

    const turn = await model.call(request());

    expect(turn.text).toBeNull();
    expect(turn.toolCalls).toEqual([
      { id: "call_a", name: "call_subordinate", arguments: '{"message":"research X","reset":"true"}' },
      { id: "call_b", name: "response", arguments: notJson },
    ]);
  });

  it("sends the model name, the messages and the tools as JSON schema, with the key as a bearer token", async () => {
    server.reply({ text: "ok" });
    const model = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL, model: "unused-default" });
    const parameters = { type: "object", properties: { message: { type: "string" } }, required: ["message"] };
    const messages: ModelRequest["messages"] = [
      { role: "system", content: "sys" },
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "result" },
    ];

    await model.call(
      request({
        model: "gpt-test-1",
        messages,
        tools: [{ name: "call_subordinate", description: "Delegate.", parameters }],
      }),
    );

    const [seen] = server.requests;
    expect(seen?.path).toBe("/v1/chat/completions");
    expect(seen?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(seen?.body.model).toBe("gpt-test-1");
    expect(seen?.body.messages).toEqual(messages);
    expect(seen?.body.tools).toEqual([
      { type: "function", function: { name: "call_subordinate", description: "Delegate.", parameters } },
    ]);
    expect(seen?.body.stream).toBeFalsy();
  });

  it("sends no tools field when the request has no tools", async () => {
    server.reply({ text: "ok" });
    await openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request());
    expect(server.requests[0]?.body).not.toHaveProperty("tools");
  });
});

describe("given a request that names another endpoint", () => {
  it("sends it to the request's baseURL, with that endpoint's key, and keeps using the default for the others", async () => {
    const other = await startFakeOpenAIServer();
    try {
      other.reply({ text: "from the other one" }, { text: "other again" });
      server.reply({ text: "from the default" });
      const model = openAIModel({
        apiKey: API_KEY,
        baseURL: server.baseURL,
        apiKeyFor: (baseURL) => (baseURL === other.baseURL ? "sk-other" : undefined),
      });

      const viaOther = await model.call(request({ baseURL: other.baseURL }));
      const viaDefault = await model.call(request());
      await model.call(request({ baseURL: other.baseURL }));

      expect(viaOther.text).toBe("from the other one");
      expect(viaDefault.text).toBe("from the default");
      expect(other.requests).toHaveLength(2);
      expect(other.requests[0]?.headers.authorization).toBe("Bearer sk-other");
      expect(server.requests).toHaveLength(1);
    } finally {
      await other.close();
    }
  });
});

describe("given an endpoint that fails", () => {
  it("maps 429 to rate_limited, retryable, with Retry-After in milliseconds, and does not retry itself", async () => {
    server.reply({ status: 429, headers: { "retry-after": "2" } }, { text: "a retry would get this" });
    const model = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL });

    const error = await failure(model.call(request()));

    expect(error).toMatchObject({ reason: "rate_limited", retryable: true, retryAfterMs: 2000, status: 429 });
    expect(server.requests).toHaveLength(1);
  });

  it("prefers retry-after-ms when the endpoint sends it", async () => {
    server.reply({ status: 429, headers: { "retry-after-ms": "150", "retry-after": "9" } });
    const error = await failure(openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request()));
    expect(error.retryAfterMs).toBe(150);
  });

  it("maps 500 to server_error, retryable", async () => {
    server.reply({ status: 500 }, { text: "a retry would get this" });
    const error = await failure(openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request()));
    expect(error).toMatchObject({ reason: "server_error", retryable: true, status: 500 });
    expect(server.requests).toHaveLength(1);
  });

  it("maps 401 to authentication, not retryable, and never shows the API key even when the endpoint echoes it", async () => {
    server.reply({ status: 401, message: `Incorrect API key provided: ${API_KEY}.` });
    const error = await failure(openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request()));

    expect(error).toMatchObject({ reason: "authentication", retryable: false, status: 401 });
    expect(error.message).toContain("Incorrect API key provided");
    expect(error.message).not.toContain(API_KEY);
    expect(
      JSON.stringify({ ...error, message: error.message, stack: error.stack, cause: String(error.cause) }),
    ).not.toContain(API_KEY);
  });

  it.each([
    [403, "authentication", false],
    [400, "bad_request", false],
    [404, "bad_request", false],
    [408, "timeout", true],
    [503, "server_error", true],
  ] as const)("maps %i to %s (retryable: %s)", async (status, reason, retryable) => {
    server.reply({ status });
    const error = await failure(openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request()));
    expect(error).toMatchObject({ reason, retryable, status });
  });

  it("maps a closed port to connection, retryable", async () => {
    const gone = server.baseURL;
    await server.close();
    server = await startFakeOpenAIServer(); // for afterEach
    const error = await failure(openAIModel({ apiKey: API_KEY, baseURL: gone }).call(request()));
    expect(error).toMatchObject({ reason: "connection", retryable: true });
  });

  it("maps a reply past timeoutMs to timeout, retryable", async () => {
    server.reply({ hang: true });
    const model = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL, timeoutMs: 200 });

    const error = await failure(model.call(request()));

    expect(error).toMatchObject({ reason: "timeout", retryable: true });
    expect(await server.requests[0]?.closed).toBe(true);
  });

  it.each([
    ["no choices", { raw: { id: "x", object: "chat.completion", choices: [] } }],
    ["a body that is not JSON", { raw: "<html>gateway</html>", contentType: "text/html" }],
    ["malformed JSON", { raw: '{"choices": [', contentType: "application/json" }],
  ] as const)("maps a response with %s to invalid_output, not retryable", async (_name, reply) => {
    server.reply(reply);
    const error = await failure(openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request()));
    expect(error).toMatchObject({ reason: "invalid_output", retryable: false });
  });
});

describe("when the call is stopped mid-flight", () => {
  it("aborts the HTTP request (the endpoint sees the client hang up) and fails with aborted", async () => {
    server.reply({ hang: true });
    const controller = new AbortController();
    const call = openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request({ signal: controller.signal }));

    const seen = await server.waitForRequest(0);
    controller.abort();

    const error = await failure(call);
    expect(error).toMatchObject({ reason: "aborted", retryable: false });
    expect(await seen.closed).toBe(true);
    expect(seen.closedByClient).toBe(true);
  }, 5_000);

  it("fails with aborted without sending anything when the signal is already aborted", async () => {
    const error = await failure(
      openAIModel({ apiKey: API_KEY, baseURL: server.baseURL }).call(request({ signal: AbortSignal.abort() })),
    );
    expect(error.reason).toBe("aborted");
    expect(server.requests).toHaveLength(0);
  });
});
