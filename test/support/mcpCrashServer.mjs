// A stdio MCP server for tests: `echo` answers, `crash` ends the process mid-call (as a crashing server would).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "crashy", version: "1.0.0" });
server.registerTool("echo", { description: "Echoes.", inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: "text", text: `${process.pid}:${text}` }],
}));
server.registerTool("crash", { description: "Exits.", inputSchema: {} }, async () => process.exit(1));
await server.connect(new StdioServerTransport());
