// A local OpenAI-compatible server with a provider's rate limit: at most `limit` requests in any rolling `windowMs`
// (counted as they arrive), a 429 beyond it with the headers OpenAI sends (Retry-After in ms, the x-ratelimit ones).
// Each accepted request is answered by `reply` (a chat completion, with usage); the server counts what it saw.
//
// Usage:
//   const server = await startRateLimitedServer({ limit: 10, windowMs: 1000, reply: (body) => ({ text: "hi" }) });
//   const model = openAIModel({ apiKey: "sk-test", baseURL: server.baseURL });
//   … server.accepted, server.refused, server.maxInWindow, server.usage …
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export type ServerTurn = { text?: string; toolCalls?: { name: string; arguments: unknown }[] };

export type RateLimitedServer = {
  baseURL: string;
  /** Requests answered with a completion, and the usage those completions reported. */
  accepted: number;
  usage: { inputTokens: number; outputTokens: number };
  /** Requests answered 429. */
  refused: number;
  /** The most requests (accepted or not) that arrived within one rolling window. */
  maxInWindow: number;
  /** Arrival times (ms) of accepted requests. */
  acceptedAt: number[];
  close(): Promise<void>;
};

export type RateLimitOptions = {
  limit: number;
  windowMs: number;
  /** The completion for an accepted request's parsed body. */
  reply: (body: any) => ServerTurn;
  /** Output tokens each reply reports. */
  outputTokens?: number;
};

export async function startRateLimitedServer(options: RateLimitOptions): Promise<RateLimitedServer> {
  const seen: number[] = []; // arrivals, accepted or not, within the last window
  const accepted: number[] = []; // accepted arrivals within the last window
  let calls = 0;
  const state: Omit<RateLimitedServer, "baseURL" | "close"> = {
    accepted: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    refused: 0,
    maxInWindow: 0,
    acceptedAt: [],
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const now = Date.now();
    const inWindow = (t: number) => t > now - options.windowMs;
    while (seen.length > 0 && !inWindow(seen[0]!)) seen.shift();
    while (accepted.length > 0 && !inWindow(accepted[0]!)) accepted.shift();
    seen.push(now);
    state.maxInWindow = Math.max(state.maxInWindow, seen.length);
    if (accepted.length >= options.limit) {
      state.refused++;
      const resetMs = Math.max(1, accepted[0]! + options.windowMs - now);
      res.writeHead(429, {
        "content-type": "application/json",
        "retry-after-ms": String(resetMs),
        "x-ratelimit-limit-requests": String(options.limit),
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": `${resetMs}ms`,
      });
      res.end(
        JSON.stringify({
          error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" },
        }),
      );
      return;
    }
    accepted.push(now);
    state.acceptedAt.push(now);
    const text = Buffer.concat(chunks).toString("utf8");
    const body = JSON.parse(text);
    const turn = options.reply(body);
    const usage = { prompt_tokens: Math.ceil(text.length / 4), completion_tokens: options.outputTokens ?? 20 };
    state.accepted++;
    state.usage.inputTokens += usage.prompt_tokens;
    state.usage.outputTokens += usage.completion_tokens;
    const toolCalls = (turn.toolCalls ?? []).map((c) => ({
      id: `call_${++calls}`,
      type: "function",
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${calls}`,
        object: "chat.completion",
        created: Math.floor(now / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop",
            message: {
              role: "assistant",
              content: turn.text ?? null,
              ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            },
          },
        ],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/**
 * The 8 × 8 fan-out as an endpoint answers it, from the request alone: a root's task or an A1's part (`… of A0`)
 * fans out to 8 subordinates in parallel on its first call and answers once they are done; an A2's part answers at once.
 */
export const fanOutReply =
  (fan: number) =>
  (body: any): ServerTurn => {
    const messages = body.messages as { role: string; content: unknown }[];
    const task = String(messages.find((m) => m.role === "user")?.content ?? "");
    const leaf = /part \d+ of A1\b/.test(task);
    if (leaf) return { text: "leaf done" };
    if (messages.some((m) => m.role === "assistant")) return { text: "all parts done" };
    const level = /part \d+ of A0\b/.test(task) ? 1 : 0;
    return {
      toolCalls: [
        {
          name: "parallel",
          arguments: {
            tool_calls: Array.from({ length: fan }, (_, i) => ({
              name: "call_subordinate",
              arguments: { message: `part ${i + 1} of A${level}` },
            })),
          },
        },
      ],
    };
  };
