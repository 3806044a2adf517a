// A2A under serve: the agent card at /.well-known/agent-card.json and JSON-RPC at /a2a (see src/protocols/a2aHandler.ts),
// behind the same token and checks as every other route (mounted after them).
// Requirements: the SDK's own JSON-RPC transport handler parses and answers (v1.0 method names, e.g. SendMessage;
// a request whose A2A-Version is 0.3, or absent, is answered by its v0.3 handler: message/send, tasks/get …);
// a streamed answer is Server-Sent Events, one JSON-RPC response per event, and ends when the client goes away.
import type { Context, Hono } from "hono";
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from "@a2a-js/sdk/server";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import type { Runtime } from "../runtime/api.ts";
import { A2A_PATH, agentCardFor, agentCardJson } from "../protocols/a2aCard.ts";
import { RuntimeA2AHandler, TaskIndex } from "../protocols/a2aHandler.ts";

const originOf = (c: Context): string => new URL(c.req.url).origin;

const sse = (c: Context, stream: AsyncGenerator<unknown>): Response => {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await stream.next();
        if (next.done) return controller.close();
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
      } catch (e) {
        controller.enqueue(
          encoder.encode(
            `event: error\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: null, error: JsonRpcTransportHandler.mapToJSONRPCError(e) })}\n\n`,
          ),
        );
        controller.close();
      }
    },
    cancel: async () => void (await stream.return(undefined)),
  });
  return c.body(body, 200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
  });
};

export const a2aRoute = (app: Hono, rt: Runtime, options: { bearer: boolean }): void => {
  // One per server: a task's context, once found, is remembered for every later request (a polling client's).
  const index = new TaskIndex();
  const handlerFor = (c: Context) =>
    new RuntimeA2AHandler(rt, () => agentCardFor(rt, originOf(c), options.bearer), index);
  app.get("/.well-known/agent-card.json", (c) =>
    c.json(agentCardJson(agentCardFor(rt, originOf(c), options.bearer)) as object),
  );
  app.post(A2A_PATH, async (c) => {
    const handler = handlerFor(c);
    const requested = c.req.header("a2a-version") || undefined;
    const legacy = (requested ?? "0.3") === "0.3";
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch (e) {
      return c.json({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: `Parse error: ${(e as Error).message}` },
      });
    }
    const context = new ServerCallContext({
      ...(requested ? { requestedVersion: requested } : {}),
      state: new Map([["headers", c.req.header()]]),
    });
    try {
      if (!legacy) validateVersion(context.requestedVersion, await handler.getAgentCard(), "JSONRPC");
      const answer = legacy
        ? await new LegacyJsonRpcTransportHandler(handler).handle(body as Record<string, unknown>, context)
        : await new JsonRpcTransportHandler(handler).handle(body as Record<string, unknown>, context);
      if (answer && typeof (answer as AsyncGenerator)[Symbol.asyncIterator] === "function")
        return sse(c, answer as AsyncGenerator<unknown>);
      return c.json(answer as object);
    } catch (e) {
      const id = (body as { id?: string | number } | null)?.id ?? null;
      return c.json({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(e) });
    }
  });
};
