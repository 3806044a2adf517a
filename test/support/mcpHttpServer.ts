// A streamable-HTTP MCP server for tests, made with the SDK: `add`, `fail` (an isError result) and `slow` (answers after `ms`).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const serverWithTools = (count: (tool: string) => void) => {
  const mcp = new McpServer({ name: "calc", version: "1.0.0" });
  mcp.registerTool(
    "add",
    { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => {
      count("add");
      return { content: [{ type: "text", text: String(a + b) }] };
    },
  );
  mcp.registerTool("fail", { description: "Always fails.", inputSchema: {} }, async () => ({
    isError: true,
    content: [{ type: "text", text: "the fail tool failed" }],
  }));
  mcp.registerTool("slow", { description: "Answers late.", inputSchema: { ms: z.number() } }, async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { content: [{ type: "text", text: "late" }] };
  });
  return mcp;
};

/** Stateless: one MCP server and transport per request, so a restarted server needs no session. */
export async function startMcpHttpServer(
  port = 0,
): Promise<{ url: string; port: number; close(): Promise<void>; calls: Map<string, number> }> {
  // How many times each tool ran, for tests that check a call did (or did not) reach the server.
  const calls = new Map<string, number>();
  const http: Server = createServer(async (req, res) => {
    const mcp = serverWithTools((tool) => calls.set(tool, (calls.get(tool) ?? 0) + 1));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  // Idle connections stay open until close(): a server closing one as a client reuses it would fail that
  // client's next connect, and its tools would be left out of a run (a test then sees the tool missing).
  http.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
  const actual = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
