// The one redaction: planted secrets of every kind leave no trace in error texts, banners or model failures.
import { afterEach, describe, expect, it } from "vitest";
import { redactSecrets } from "../../src/events/redact.ts";
import { openAIModel } from "../../src/models/openai.ts";
import { ModelError, type ModelRequest } from "../../src/models/port.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";

const PLANTED = ["s3cret-userinfo", "qwerty-query-pw", "sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "pgpass-from-env"];

describe("given texts holding secrets", () => {
  it("when redacted, then URL passwords, password= params, key shapes, Bearer tokens and PGPASSWORD are gone and the rest stays", () => {
    const before = process.env["PGPASSWORD"];
    process.env["PGPASSWORD"] = "pgpass-from-env";
    try {
      const text =
        "connect to http://alice:s3cret-userinfo@models.local/v1 failed; " +
        "store postgres://bob@db.local:5432/log?sslmode=disable&password=qwerty-query-pw refused; " +
        "key sk-proj-ABCDEFGHIJKLMNOPQRSTUV rejected; Authorization: Bearer abcdefghijklmnop; password pgpass-from-env";
      const out = redactSecrets(text);
      for (const s of PLANTED) expect(out).not.toContain(s);
      expect(out).not.toContain("abcdefghijklmnop");
      expect(out).toContain("http://alice:***@models.local/v1");
      expect(out).toContain("postgres://bob@db.local:5432/log?sslmode=disable&password=***");
      expect(redactSecrets(out)).toBe(out);
      expect(redactSecrets("a plain sentence, https://example.test/a?b=c")).toBe(
        "a plain sentence, https://example.test/a?b=c",
      );
    } finally {
      if (before === undefined) delete process.env["PGPASSWORD"];
      else process.env["PGPASSWORD"] = before;
    }
  });
});

let server: FakeOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const request: ModelRequest = {
  contextId: "ctx-1",
  agentNumber: 0,
  profile: "default",
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
  signal: new AbortController().signal,
};

describe("given a model endpoint whose base URL carries credentials", () => {
  it("when the endpoint's error text echoes credentials, then the ModelError (what is stored) holds none", async () => {
    server = await startFakeOpenAIServer();
    server.reply({
      status: 400,
      message: `bad request to http://alice:s3cret-userinfo@models.local/v1 (db postgres://u@h/d?password=qwerty-query-pw)`,
    });
    const error = await openAIModel({ apiKey: "sk-test-key-0123456789", baseURL: server.baseURL })
      .call(request)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ModelError);
    const text = `${(error as Error).message} ${JSON.stringify(error)}`;
    expect(text).toContain("bad request");
    for (const s of PLANTED) expect(text).not.toContain(s);
  });

  it("when the base URL itself carries credentials, then the connection error names no password", async () => {
    server = await startFakeOpenAIServer();
    const gone = new URL(server.baseURL);
    await server.close();
    server = undefined;
    gone.username = "alice";
    gone.password = "s3cret-userinfo";
    const error = await openAIModel({ apiKey: "sk-test-key-0123456789", baseURL: gone.toString() })
      .call(request)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toMatchObject({ reason: "connection" });
    expect(`${(error as Error).message} ${JSON.stringify(error)}`).not.toContain("s3cret-userinfo");
  });
});

describe("given secret values from configuration", () => {
  it("when marked with addSecrets, then every later redaction cuts them, longest first, and short values are left alone", async () => {
    const { addSecrets } = await import("../../src/events/redact.ts");
    const { mcpSecretValues } = await import("../../src/tools/mcpConfig.ts");
    const values = mcpSecretValues({
      web: {
        type: "http",
        url: "http://127.0.0.1:1/mcp",
        headers: { Authorization: "Token hdr-secret-123", Accept: "json" },
      },
      local: { type: "stdio", command: "x", env: { API_TOKEN: "env-secret-456", DEBUG: "1" } },
    });
    expect(values).toEqual(["Token hdr-secret-123", "hdr-secret-123", "json", "env-secret-456", "1"]);
    expect(redactSecrets("sent Token hdr-secret-123 and env-secret-456")).toContain("hdr-secret-123");
    addSecrets(values);
    expect(redactSecrets("sent Token hdr-secret-123 and env-secret-456 as json, DEBUG=1")).toBe(
      "sent *** and *** as json, DEBUG=1",
    );
  });
});
