// `actorzero mcp`: the runtime as an MCP server on stdin/stdout, one tool per enabled profile (`delegate_to_<profile>`).
// Requirements: nothing but MCP messages on stdout (notes go to stderr); the log is opened as `serve` opens it, and on
// a PGlite data dir the control socket answers too, so `actorzero stop|approve|tree|audit` reach the runs it drives;
// when the client closes stdin (or on SIGTERM/SIGINT) runs in flight are recorded as interrupted and the log is closed.
import { loadConfig } from "../config.ts";
import type { Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { defineCommand, RUN_STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { chooseModel } from "../modelChoice.ts";
import { describeLocation, locate, openLog } from "../openLog.ts";
import { runtimeFor } from "../runtimeFor.ts";
import { SERVER_MODEL_FLAGS } from "../modelFlags.ts";

export const mcpSpec = defineCommand({
  name: "mcp",
  summary: "Serve the runtime as an MCP server on stdio: each enabled profile is a tool, delegate_to_<profile>.",
  usage: ["mcp [--data-dir <dir> | --store <store>] [model options]"],
  flags: { ...SERVER_MODEL_FLAGS, ...RUN_STORE_FLAGS },
  details: `For an MCP client's config, e.g. { "command": "npx", "args": ["actorzero", "mcp", "--data-dir", "/path/.actorzero"] }.
A tool call runs a root of that profile and answers with its response and contextId (pass it back as context_id
to continue). The runs are in the log like any other: watch them with tree, decide approvals with approve, end
one with stop. stdout carries MCP only; notes go to stderr.`,
});
type Values = ValuesOf<typeof mcpSpec>;

export const mcpCommand = async (v: Values, io: Io): Promise<number> => {
  const { serveControlSocket } = await import("../../server/index.ts");
  const { mcpServerFor } = await import("../../protocols/mcpServer.ts");
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const where = locate(v, "mcp");
  const config = loadConfig(io.cwd);
  const choice = await chooseModel(v, config, io.env);
  const store = await openLog(where, { create: true });
  try {
    const rt = await runtimeFor(store, config, choice, v.recovery ?? "resume");
    try {
      const control = where.kind === "pglite" ? await serveControlSocket(rt, where.dataDir) : null;
      const server = mcpServerFor(rt);
      const transport = new StdioServerTransport();
      const ended = new Promise<string>((resolve) => {
        transport.onclose = () => resolve("the client closed the connection");
        process.stdin.once("end", () => resolve("the client closed stdin"));
        process.once("SIGTERM", () => resolve("SIGTERM"));
        process.once("SIGINT", () => resolve("SIGINT"));
      });
      await server.connect(transport);
      io.warn(
        `actorzero mcp: serving ${rt.profiles().length} profile tools on stdio (${describeLocation(where)}; ${choice.banner})`,
      );
      const why = await ended;
      io.warn(`actorzero mcp: ${why}: closing (runs in flight are recorded as interrupted)`);
      await rt.close();
      await Promise.all([server.close().catch(() => undefined), control?.close()]);
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
  return EXIT.ok;
};
