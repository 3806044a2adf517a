// A zero-latency OpenAI-compatible server in its own process, for the streaming bench: the client's figures then
// carry only the client's work, as with a real endpoint. A fixed script: A0's first call delegates, A1 answers,
// A0 composes. Streamed replies go out as 4-character chunks, each written on its own, like the real API's.
// Prints the port on stdout once listening.
import { createServer } from "node:http";

const ANSWER = "The Belém Tower, then pastries nearby; the tram back along the river before sunset.";
const USAGE = { prompt_tokens: 60, completion_tokens: 20, total_tokens: 80 };

const replyFor = (body) => {
  const last = body.messages.at(-1);
  if (last.role === "tool") return { text: `Day plan: ${ANSWER}` };
  if (String(last.content).startsWith("look up")) return { text: ANSWER };
  return {
    call: {
      id: `call_${Math.random().toString(16).slice(2, 10)}`,
      name: "call_subordinate",
      arguments: JSON.stringify({ message: "look up one sight", reset: true }),
    },
  };
};

const pieces = (text) => text.match(/[\s\S]{1,4}/g) ?? [];

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const reply = replyFor(body);
  const toolCalls = reply.call
    ? [{ id: reply.call.id, type: "function", function: { name: reply.call.name, arguments: reply.call.arguments } }]
    : undefined;
  const finish = toolCalls ? "tool_calls" : "stop";
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "chatcmpl-bench",
        object: "chat.completion",
        created: 0,
        model: body.model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: reply.text ?? null,
              refusal: null,
              ...(toolCalls ? { tool_calls: toolCalls } : {}),
            },
            finish_reason: finish,
            logprobs: null,
          },
        ],
        usage: USAGE,
      }),
    );
    return;
  }
  const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: body.model };
  const choice = (delta, finishReason = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
  });
  const out = [choice({ role: "assistant", content: "" })];
  for (const p of pieces(reply.text ?? "")) out.push(choice({ content: p }));
  if (toolCalls) {
    out.push(
      choice({
        tool_calls: [
          { index: 0, id: reply.call.id, type: "function", function: { name: reply.call.name, arguments: "" } },
        ],
      }),
    );
    for (const p of pieces(reply.call.arguments))
      out.push(choice({ tool_calls: [{ index: 0, function: { arguments: p } }] }));
  }
  out.push(choice({}, finish));
  out.push({ ...base, choices: [], usage: USAGE });
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  for (const chunk of out) await new Promise((resolve) => res.write(`data: ${JSON.stringify(chunk)}\n\n`, resolve));
  res.end("data: [DONE]\n\n");
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
process.on("disconnect", () => process.exit(0));
