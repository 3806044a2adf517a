// A streamable-HTTP MCP server for tests, made with the SDK: `add`, `fail` (an isError result) and `slow` (answers after `ms`).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const serverWithTools = () => {
  const mcp = new McpServer({ name: "calc", version: "1.0.0" });
  mcp.registerTool("add", { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: "text", text: String(a + b) }],
  }));
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
export async function startMcpHttpServer(port = 0): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const http: Server = createServer(async (req, res) => {
    const mcp = serverWithTools();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
  const actual = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
