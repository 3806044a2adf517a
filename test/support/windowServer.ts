// A local OpenAI-compatible server with a context window, playing a root that delegates each turn to a reused child.
//
// - Every request is counted with the runtime's tokenizer (messages and tools as sent); one whose prompt plus
//   `reserve` passes `window` gets a 400 `context_length_exceeded`, as OpenAI answers, and is counted in `refused`.
// - A summary request (its system prompt is the runtime's SUMMARY_INSTRUCTIONS) gets a short summary.
// - A0 (the root): a user message `turn N` → call_subordinate (reset false) with `task N`; the child's answer →
//   `response` with `done N`. A1 (the child): `task N` → `response` with a result of `resultWords` words.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SUMMARY_INSTRUCTIONS } from "../../src/actors/summaryRequest.ts";
import type { ChatMessage } from "../../src/models/messages.ts";
import { tokenCounterFor } from "../../src/models/tokenCount.ts";

export type WindowServer = {
  baseURL: string;
  /** The window enforced now (a test may lower it). */
  window: number;
  /** Tokens every request must leave free (the reply's room). */
  reserve: number;
  /** Requests refused as too long. */
  refused: number;
  /** The largest prompt (tokens) accepted. */
  largest: number;
  requests: number;
  summaries: number;
  /** Counted prompt tokens of each answered request, with whether it was a summary request. */
  prompts: { tokens: number; summary: boolean }[];
  close(): Promise<void>;
};

const filler = (n: number, seed: number) =>
  Array.from({ length: n }, (_, j) => `item${(j * 13 + seed) % 101}`).join(" ");

export async function startWindowServer(opts: {
  window: number;
  reserve: number;
  resultWords?: number;
}): Promise<WindowServer> {
  const counter = await tokenCounterFor("gpt-4o-mini");
  let ids = 0;
  const state: Omit<WindowServer, "baseURL" | "close"> = {
    window: opts.window,
    reserve: opts.reserve,
    refused: 0,
    largest: 0,
    requests: 0,
    summaries: 0,
    prompts: [],
  };
  const send = (res: import("node:http").ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
      messages: ChatMessage[];
      tools?: { function: { name: string; description: string; parameters: Record<string, unknown> } }[];
    };
    state.requests++;
    const tools = (body.tools ?? []).map((t) => ({
      name: t.function.name,
      description: t.function.description,
      parameters: t.function.parameters,
    }));
    const tokens = counter.request({ messages: body.messages, tools });
    if (tokens + state.reserve > state.window) {
      state.refused++;
      return send(res, 400, {
        error: {
          message: `This model's maximum context length is ${state.window} tokens. However, your messages resulted in ${tokens} tokens.`,
          type: "invalid_request_error",
          param: "messages",
          code: "context_length_exceeded",
        },
      });
    }
    state.largest = Math.max(state.largest, tokens);
    const system = body.messages[0]?.content ?? "";
    const last = body.messages.at(-1)!;
    const summary = system === SUMMARY_INSTRUCTIONS;
    state.prompts.push({ tokens, summary });
    const reply = (message: Record<string, unknown>) =>
      send(res, 200, {
        id: `c${++ids}`,
        object: "chat.completion",
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", ...message } }],
        usage: { prompt_tokens: tokens, completion_tokens: 12 },
      });
    const call = (name: string, args: unknown) =>
      reply({
        content: null,
        tool_calls: [{ id: `call_${++ids}`, type: "function", function: { name, arguments: JSON.stringify(args) } }],
      });
    if (summary) {
      state.summaries++;
      const numbers = [...String(last.content).matchAll(/(?:turn|task|done) (\d+)/g)].map((m) => Number(m[1]));
      return reply({
        content: `Earlier turns up to ${numbers.length ? Math.max(...numbers) : 0} were delegated and answered.`,
      });
    }
    const root = system.includes("You are agent A0 ");
    const n = (text: string) => /(?:turn|task) (\d+)/.exec(text)?.[1] ?? "?";
    if (root && last.role === "user")
      return call("call_subordinate", { message: `task ${n(last.content)}`, reset: false });
    if (root && last.role === "tool") {
      const asked = [...body.messages].reverse().find((m) => m.role === "user" && /^turn \d+/.test(m.content));
      return call("response", { text: `done ${asked ? n(String(asked.content)) : "?"}` });
    }
    if (last.role === "user")
      return call("response", {
        text: `result of task ${n(last.content)}: ${filler(opts.resultWords ?? 40, Number(n(last.content)) || 0)}`,
      });
    return reply({ content: "nothing to do" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  }) as WindowServer;
}
