// A stdio MCP server for tests that repeats its environment: `token` answers with TEST_MCP_TOKEN, `fail` fails quoting it
// (as a server complaining about a bad credential would).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "envy", version: "1.0.0" });
server.registerTool("token", { description: "Says its token.", inputSchema: {} }, async () => ({
  content: [{ type: "text", text: `my token is ${process.env.TEST_MCP_TOKEN}` }],
}));
server.registerTool("fail", { description: "Fails.", inputSchema: {} }, async () => ({
  isError: true,
  content: [{ type: "text", text: `token ${process.env.TEST_MCP_TOKEN} was refused` }],
}));
await server.connect(new StdioServerTransport());
