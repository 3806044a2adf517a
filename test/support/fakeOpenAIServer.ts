// A local OpenAI-compatible chat completions server for tests: scripted replies, recorded requests, client aborts seen.
//
// Usage:
//   const server = await startFakeOpenAIServer();
//   server.reply({ text: "hi" }, { toolCalls: [{ name: "t", arguments: '{"a":1}' }] }, { status: 429, headers: { "retry-after": "2" } });
//   const model = openAIModel({ apiKey: "sk-test", baseURL: server.baseURL });
//   … server.requests[0].body.messages …
//   server.reply({ hang: true }); … const seen = await server.waitForRequest(0); abort; await seen.closed;  // true: the client hung up
//   await server.close();
// A request with `stream: true` gets the same scripted reply as server-sent chunks like the real API: text and
// tool-call arguments cut into `chunkSize`-character pieces, a finish chunk, a usage chunk when
// `stream_options.include_usage` is set, then `[DONE]`. `dropAfterChunks: n` destroys the socket after n chunks;
// `hangAfterChunks: n` sends n chunks and then nothing more.
// Each request takes the next scripted reply; a request with none left gets a 400 and is listed in `unexpected`.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type FakeToolCall = { id?: string; name: string; arguments: string };

/** What the server answers to one request. `delayMs` waits before answering (the client may abort meanwhile). */
export type FakeReply = { delayMs?: number } & (
  | {
      text?: string | null;
      toolCalls?: FakeToolCall[];
      usage?: { inputTokens: number; outputTokens: number };
      chunkSize?: number;
      dropAfterChunks?: number;
      hangAfterChunks?: number;
    }
  /** An error in OpenAI's error shape, e.g. `{ status: 429, headers: { "retry-after": "2" } }`. */
  | { status: number; message?: string; headers?: Record<string, string> }
  /** Never answers: the request stays open until the client gives up or the server closes. */
  | { hang: true }
  /** Exactly this body (JSON-encoded unless a string) with this status and content type. */
  | { raw: unknown; status?: number; contentType?: string }
);

export type RecordedRequest = {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the raw text when it does not parse). */
  body: any;
  /** True once the client closed the connection before the reply was complete (an abort or a timeout). */
  closedByClient: boolean;
  /** Resolves when the exchange ends: with true when the client hung up first, false when the reply was sent. */
  closed: Promise<boolean>;
};

export type FakeOpenAIServer = {
  /** The base URL to give a client, ending in `/v1`. */
  baseURL: string;
  requests: RecordedRequest[];
  /** Descriptions of requests that arrived when no reply was left. */
  unexpected: string[];
  /** Queues replies, answered in order; a function gets the recorded request. */
  reply(...replies: (FakeReply | ((request: RecordedRequest) => FakeReply))[]): void;
  /** Resolves with the `index`-th request (0-based) once it has arrived. */
  waitForRequest(index: number): Promise<RecordedRequest>;
  close(): Promise<void>;
};

export async function startFakeOpenAIServer(): Promise<FakeOpenAIServer> {
  const queue: (FakeReply | ((request: RecordedRequest) => FakeReply))[] = [];
  const requests: RecordedRequest[] = [];
  const unexpected: string[] = [];
  const waiters: { index: number; resolve: (r: RecordedRequest) => void }[] = [];

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    let settle!: (byClient: boolean) => void;
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body,
      closedByClient: false,
      closed: new Promise<boolean>((resolve) => (settle = resolve)),
    };
    res.on("close", () => {
      recorded.closedByClient = !res.writableFinished;
      settle(recorded.closedByClient);
    });
    const index = requests.push(recorded) - 1;
    for (const waiter of waiters.filter((w) => w.index === index)) waiter.resolve(recorded);

    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "POST" || (path !== "/v1/chat/completions" && path !== "/chat/completions")) {
      return send(res, 404, {
        error: { message: `fake OpenAI server: no route ${req.method} ${req.url}`, type: "invalid_request_error" },
      });
    }
    const next = queue.shift();
    if (next === undefined) {
      const problem = `request #${index} arrived with no reply scripted`;
      unexpected.push(problem);
      return send(res, 400, { error: { message: `fake OpenAI server: ${problem}`, type: "invalid_request_error" } });
    }
    const reply = typeof next === "function" ? next(recorded) : next;
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (res.destroyed) return;
    if ("hang" in reply) return;
    if ("raw" in reply) {
      res.writeHead(reply.status ?? 200, { "content-type": reply.contentType ?? "application/json" });
      return res.end(typeof reply.raw === "string" ? reply.raw : JSON.stringify(reply.raw));
    }
    if ("status" in reply) {
      return send(
        res,
        reply.status,
        {
          error: {
            message: reply.message ?? `fake error ${reply.status}`,
            type: "fake_error",
            code: null,
            param: null,
          },
        },
        reply.headers,
      );
    }
    const model = (body as { model?: unknown })?.model ?? "fake-model";
    const toolCalls = reply.toolCalls?.map((call, i) => ({
      id: call.id ?? `call_${index}_${i}`,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }));
    const usage = reply.usage ?? { inputTokens: 0, outputTokens: 0 };
    if ((body as { stream?: unknown })?.stream === true) {
      const includeUsage =
        (body as { stream_options?: { include_usage?: unknown } }).stream_options?.include_usage === true;
      return streamReply(res, {
        index,
        model,
        reply,
        toolCalls: toolCalls ?? [],
        usage: includeUsage ? usage : undefined,
      });
    }
    return send(res, 200, {
      id: `chatcmpl-${index}`,
      object: "chat.completion",
      created: 0,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: reply.text ?? null,
            refusal: null,
            ...(toolCalls?.length ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: toolCalls?.length ? "tool_calls" : "stop",
          logprobs: null,
        },
      ],
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens,
      },
    });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    unexpected,
    reply: (...replies) => void queue.push(...replies),
    waitForRequest: (index) =>
      requests[index] ? Promise.resolve(requests[index]) : new Promise((resolve) => waiters.push({ index, resolve })),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

const send = (res: ServerResponse, status: number, json: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(json));
};

const pieces = (text: string, size: number): string[] => {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
};

/** The scripted reply as chat.completion.chunk events, each written (and flushed) on its own. */
const streamReply = async (
  res: ServerResponse,
  options: {
    index: number;
    model: unknown;
    reply: { text?: string | null; chunkSize?: number; dropAfterChunks?: number; hangAfterChunks?: number };
    toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[];
    usage: { inputTokens: number; outputTokens: number } | undefined;
  },
) => {
  const { index, model, reply, toolCalls, usage } = options;
  const size = Math.max(1, reply.chunkSize ?? 3);
  const base = { id: `chatcmpl-${index}`, object: "chat.completion.chunk", created: 0, model };
  const choice = (delta: unknown, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  const chunks: unknown[] = [choice({ role: "assistant", content: "" })];
  for (const piece of pieces(reply.text ?? "", size)) chunks.push(choice({ content: piece }));
  toolCalls.forEach((call, i) => {
    chunks.push(
      choice({
        tool_calls: [
          { index: i, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
        ],
      }),
    );
    for (const piece of pieces(call.function.arguments, size))
      chunks.push(choice({ tool_calls: [{ index: i, function: { arguments: piece } }] }));
  });
  chunks.push(choice({}, toolCalls.length ? "tool_calls" : "stop"));
  if (usage) {
    chunks.push({
      ...base,
      choices: [],
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens,
      },
    });
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  for (const [n, chunk] of chunks.entries()) {
    if (reply.dropAfterChunks === n) return void res.socket?.destroy();
    if (reply.hangAfterChunks === n) return;
    // Each chunk leaves on its own (as the real API's do), so a drop after n chunks has delivered n.
    await new Promise<void>((resolve) => res.write(`data: ${JSON.stringify(chunk)}\n\n`, () => resolve()));
  }
  res.end("data: [DONE]\n\n");
};
