// MCP naming and per-profile server selection: pure functions.
import { describe, expect, it } from "vitest";
import { allowedMcpServers, mcpToolName, validateMcpServers } from "../../src/tools/mcpConfig.ts";

describe("mcpToolName", () => {
  it("prefixes the server and replaces characters outside OpenAI's name rules", () => {
    expect(mcpToolName("files", "read.file")).toBe("files__read_file");
    expect(mcpToolName("web", "get-page")).toBe("web__get-page");
  });

  it("keeps a long name within 64 characters and two long names that share a start apart", () => {
    const long = "x".repeat(80);
    const a = mcpToolName("srv", `${long}a`);
    const b = mcpToolName("srv", `${long}b`);
    expect(a).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(a).not.toBe(b);
  });

  it("gives a tool whose sanitised name is taken another name", () => {
    const first = mcpToolName("s", "a.b");
    const second = mcpToolName("s", "a_b", new Set([first]));
    expect(second).not.toBe(first);
    expect(second).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });
});

describe("allowedMcpServers", () => {
  const configured = ["files", "web", "db"];

  it("gives every configured server when the profile says '*' or nothing", () => {
    expect(allowedMcpServers({ configured, profile: "*" })).toEqual(configured);
    expect(allowedMcpServers({ configured })).toEqual(configured);
  });

  it("gives only the listed servers, in configuration order, and none for an empty list", () => {
    expect(allowedMcpServers({ configured, profile: ["db", "files"] })).toEqual(["files", "db"]);
    expect(allowedMcpServers({ configured, profile: [] })).toEqual([]);
  });

  it("narrows the profile's selection by the project's", () => {
    expect(allowedMcpServers({ configured, profile: "*", project: ["web"] })).toEqual(["web"]);
    expect(allowedMcpServers({ configured, profile: ["files", "web"], project: ["web", "db"] })).toEqual(["web"]);
  });

  it("refuses a server name that is not configured, naming it and the configured ones", () => {
    expect(() => allowedMcpServers({ configured, profile: ["fils"], owner: "Profile 'researcher'" })).toThrow(
      /Profile 'researcher' names MCP server\(s\) 'fils'.*configured: 'files', 'web', 'db'/,
    );
  });
});

describe("validateMcpServers", () => {
  it("accepts stdio and http servers", () => {
    expect(() =>
      validateMcpServers({ a: { type: "stdio", command: "node" }, b: { type: "http", url: "http://127.0.0.1:1/mcp" } }),
    ).not.toThrow();
  });

  it.each([
    ["a name that cannot prefix a tool name", { "bad name": { type: "stdio", command: "node" } }, /bad name/],
    ["a stdio server with no command", { a: { type: "stdio", command: "" } }, /'a' \(stdio\) needs a command/],
    ["an http server with a bad url", { a: { type: "http", url: "not a url" } }, /'a' \(http\) needs a valid url/],
    ["an unknown type", { a: { type: "ws", url: "x" } }, /expected "stdio" or "http"/],
  ] as const)("refuses %s", (_name, servers, message) => {
    expect(() => validateMcpServers(servers as never)).toThrow(message);
  });
});
