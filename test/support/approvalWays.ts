// The nine ways a tool call can be made to wait for a person (tools/approval.ts, runtime/approvalPolicy.ts), each
// as the runtime options, the context and the call that need it, and a count of the calls that really ran.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { defineTool, type RuntimeOptions, type Tool } from "../../src/index.ts";
import { startMcpHttpServer } from "./mcpHttpServer.ts";

export type ApprovalWay = {
  name: string;
  /** The call the acting context makes. */
  call: { name: string; arguments: Record<string, unknown> };
  /** What it answers once it runs. */
  result: string;
  options: Partial<RuntimeOptions>;
  /** The acting context's profile (a root is created with it; a subordinate is asked for with it). */
  profile?: string;
  /** The root's project (a subordinate inherits it). */
  project?: string;
  /** How many times the call really ran. */
  ran(): number;
};

/** Plain tools: `write_file` (nothing of its own asks for approval) and an own tool built by `needsApproval`. */
const counted = (name: string, needsApproval: Tool<{ path: string }>["needsApproval"], ran: string[]) =>
  defineTool({
    name,
    description: `${name} writes a file`,
    input: z.object({ path: z.string() }),
    ...(needsApproval === undefined ? {} : { needsApproval }),
    run: ({ path }) => {
      ran.push(`${name} ${path}`);
      return `wrote ${path}`;
    },
  });

/** The ways' names, in order (known before the ways are set up, so tests can be listed by them). */
export const APPROVAL_WAY_NAMES = [
  "the tool's own needsApproval (flagged)",
  "the tool's own needsApproval (by_input)",
  "the tool's own needsApproval (by_async_input)",
  "the tool's own needsApproval (check_throws)",
  "the tool's own needsApproval (check_answers_no_boolean)",
  "approvals.tools naming the tool",
  "approvals.tools naming an MCP server's tools by prefix (calc__*)",
  "a profile's needsApproval",
  "a project's needsApproval",
] as const;

/** Sets up the ways (a profile directory, an MCP server); `close` removes them. */
export const approvalWays = async (): Promise<{ ways: ApprovalWay[]; close(): Promise<void> }> => {
  const mcp = await startMcpHttpServer();
  const profiles = mkdtempSync(join(tmpdir(), "actorzero-approval-ways-"));
  mkdirSync(join(profiles, "ops"));
  writeFileSync(
    join(profiles, "ops", "profile.json"),
    JSON.stringify({ title: "Ops", context: "Runs operations.", needsApproval: ["write_file"] }),
  );
  const ran: string[] = [];
  const ranOf = (name: string) => () => ran.filter((r) => r.startsWith(`${name} `)).length;
  const write = { call: { name: "write_file", arguments: { path: "/etc/app.conf" } }, result: "wrote /etc/app.conf" };
  const own = (name: string, needsApproval: Tool<{ path: string }>["needsApproval"]): ApprovalWay => ({
    name: `the tool's own needsApproval (${name})`,
    call: { name, arguments: { path: "/srv/prod" } },
    result: "wrote /srv/prod",
    options: { tools: [counted(name, needsApproval, ran)] },
    ran: ranOf(name),
  });
  const plainWrite = () => counted("write_file", undefined, ran);
  const ways: ApprovalWay[] = [
    own("flagged", true),
    own("by_input", ({ path }) => path.startsWith("/srv/prod")),
    own("by_async_input", async ({ path }) => path.startsWith("/srv/")),
    own("check_throws", () => {
      throw new Error("policy service down");
    }),
    own("check_answers_no_boolean", (() => "maybe") as never),
    {
      name: "approvals.tools naming the tool",
      ...write,
      options: { tools: [plainWrite()], approvals: { tools: ["write_file"] } },
      ran: ranOf("write_file"),
    },
    {
      name: "approvals.tools naming an MCP server's tools by prefix (calc__*)",
      call: { name: "calc__add", arguments: { a: 2, b: 3 } },
      result: "5",
      options: { mcpServers: { calc: { type: "http", url: mcp.url } }, approvals: { tools: ["calc__*"] } },
      ran: () => mcp.calls.get("add") ?? 0,
    },
    {
      name: "a profile's needsApproval",
      ...write,
      options: { tools: [plainWrite()], profiles: [profiles] },
      profile: "ops",
      ran: ranOf("write_file"),
    },
    {
      name: "a project's needsApproval",
      ...write,
      options: { tools: [plainWrite()], projects: { prod: { needsApproval: ["write_file"] } } },
      project: "prod",
      ran: ranOf("write_file"),
    },
  ];
  if (ways.map((w) => w.name).join("\n") !== APPROVAL_WAY_NAMES.join("\n"))
    throw new Error("APPROVAL_WAY_NAMES is out of date");
  return {
    ways,
    async close() {
      await mcp.close();
      rmSync(profiles, { recursive: true, force: true });
    },
  };
};
