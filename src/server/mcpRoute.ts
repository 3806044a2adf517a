// `/mcp`: the runtime's profiles as MCP tools over streamable HTTP (see src/protocols/mcpServer.ts), behind the
// same token and checks as every other route (it is mounted after them).
// Requirements: stateless (no MCP session): each POST gets its own server and transport, so any process serving
// the log can answer any call; GET and DELETE (sessions, server-initiated streams) answer 405, as the spec allows.
import type { Hono } from "hono";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Runtime } from "../runtime/api.ts";
import { mcpServerFor } from "../protocols/mcpServer.ts";

export const mcpRoute = (app: Hono, rt: Runtime): void => {
  app.post("/mcp", async (c) => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = mcpServerFor(rt);
    await server.connect(transport);
    // The transport answers the call when the run ends; a client that goes away aborts the request (a cancel).
    const response = await transport.handleRequest(c.req.raw);
    c.req.raw.signal.addEventListener("abort", () => void server.close().catch(() => undefined), { once: true });
    return response;
  });
  const notAllowed = () =>
    new Response(
      JSON.stringify({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: this server is stateless (POST only)" },
        id: null,
      }),
      {
        status: 405,
        headers: { "content-type": "application/json", allow: "POST" },
      },
    );
  app.get("/mcp", notAllowed);
  app.delete("/mcp", notAllowed);
};
