// The request guard over real HTTP: a Host the server is not reached by, an Origin that is not its own, a write that
// is not JSON are each refused before any route, and nothing is written; each opt-in lets exactly its name in.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serve } from "../../src/index.ts";
import { served, type Served } from "./support.ts";

/** One request with exactly these headers (fetch will not send a Host or Origin of our choosing). */
const raw = (url: string, method: string, path: string, headers: Record<string, string>, body?: string) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: any }>(
    (resolve, reject) => {
      const u = new URL(url);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          method,
          path,
          headers: { ...headers, ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}) },
          agent: false,
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (text += d));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: text.startsWith("{") ? JSON.parse(text) : text,
            }),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );

let s: Served;
let own: string;
let hostHeader: string;
const JSON_TYPE = { "content-type": "application/json" };

beforeAll(async () => {
  s = await served(() => ({ text: "ok" }));
  own = s.url;
  hostHeader = new URL(s.url).host;
});
afterAll(async () => s.close());

const logLength = async () => (await s.rt.events({ after: 0, limit: 100_000 })).length;

describe("given a server bound to 127.0.0.1 with no options", () => {
  it("when a request names another Host (as a DNS-rebinding page does), then it is 421 on every route and nothing is written", async () => {
    const before = await logLength();
    for (const [method, path, body] of [
      ["GET", "/v1/contexts", undefined],
      ["GET", "/v1/approvals", undefined],
      ["GET", "/", undefined],
      ["GET", "/healthz", undefined],
      ["GET", "/v1/events/stream", undefined],
      ["POST", "/v1/contexts", "{}"],
    ] as const) {
      const res = await raw(own, method, path, { host: `evil.example:${new URL(own).port}`, ...JSON_TYPE }, body);
      expect(res.status, `${method} ${path}`).toBe(421);
      if (path !== "/") expect(res.body.error.code).toBe("misdirected");
    }
    expect(
      (await raw(own, "POST", "/v1/contexts", { host: "evil.example", ...JSON_TYPE }, "{}")).body.error.message,
    ).toMatch(/Host 'evil\.example' is not a name this server answers to/);
    expect(await logLength()).toBe(before);
  });

  it("when a request names a loopback name (localhost, 127.0.0.1, [::1]), then it is answered", async () => {
    const port = new URL(own).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, "LOCALHOST", "localhost."]) {
      expect((await raw(own, "GET", "/healthz", { host })).status, host).toBe(200);
    }
  });

  it("when a write comes from another origin, then it is 403 and nothing is written; its own origin is answered", async () => {
    const before = await logLength();
    for (const origin of [
      "http://evil.example",
      "null",
      `http://localhost:${Number(new URL(own).port) + 1}`,
      "https://" + hostHeader,
    ]) {
      const res = await raw(own, "POST", "/v1/contexts", { host: hostHeader, origin, ...JSON_TYPE }, "{}");
      expect(res.status, origin).toBe(403);
      expect(res.body.error.code).toBe("forbidden");
      expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    }
    expect(await logLength()).toBe(before);
    const mine = await raw(own, "POST", "/v1/contexts", { host: hostHeader, origin: own, ...JSON_TYPE }, "{}");
    expect(mine.status).toBe(201);
    expect(await logLength()).toBeGreaterThan(before);
  });

  it("when another site fetches without an Origin (a no-cors GET), then it is 403; a person navigating to the page is answered", async () => {
    const cross = await raw(own, "GET", "/v1/contexts", {
      host: hostHeader,
      "sec-fetch-site": "cross-site",
      "sec-fetch-mode": "no-cors",
    });
    expect(cross.status).toBe(403);
    const sameSite = await raw(own, "GET", "/v1/events/stream", {
      host: hostHeader,
      "sec-fetch-site": "same-site",
      "sec-fetch-mode": "cors",
    });
    expect(sameSite.status).toBe(403);
    const opened = await raw(own, "GET", "/", {
      host: hostHeader,
      "sec-fetch-site": "cross-site",
      "sec-fetch-mode": "navigate",
    });
    expect(opened.status).toBe(200);
    expect(String(opened.body)).toContain("<html");
  });

  it("when a write is not JSON (text/plain, a form, multipart, no type), then it is 415 and nothing is written", async () => {
    const before = await logLength();
    const id = (await s.rt.createContext()).id;
    const afterCreate = await logLength();
    expect(afterCreate).toBeGreaterThan(before);
    for (const [type, body] of [
      ["text/plain", '{"name":"x"}'],
      ["application/x-www-form-urlencoded", "name=x"],
      ["multipart/form-data; boundary=b", '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--b--\r\n'],
      [undefined, ""],
    ] as const) {
      const headers: Record<string, string> = { host: hostHeader, ...(type ? { "content-type": type } : {}) };
      const created = await raw(own, "POST", "/v1/contexts", headers, body);
      expect(created.status, String(type)).toBe(415);
      expect(created.body.error.code).toBe("unsupported_media_type");
      expect((await raw(own, "POST", `/v1/contexts/${id}/messages`, headers, '{"text":"hi"}')).status).toBe(415);
    }
    expect(await logLength()).toBe(afterCreate);
    // A body-less write with the JSON type is fine (stop, pause and resume take none).
    expect((await raw(own, "POST", `/v1/contexts/${id}/pause`, { host: hostHeader, ...JSON_TYPE })).status).toBe(200);
    expect(
      (
        await raw(own, "POST", `/v1/contexts/${id}/resume`, {
          host: hostHeader,
          "content-type": "application/json; charset=utf-8",
        })
      ).status,
    ).toBe(200);
  });
});

describe("given a server told to allow a host name and an origin", () => {
  let opted: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    opted = await serve(s.rt, {
      port: 0,
      allowedHosts: ["actorzero.internal"],
      allowOrigins: ["https://dashboard.example"],
    });
  });
  afterAll(async () => opted.close());

  it("when a request names the allowed host, then it is answered; another name still gets 421", async () => {
    expect((await raw(opted.url, "GET", "/v1/contexts", { host: "actorzero.internal:443" })).status).toBe(200);
    expect((await raw(opted.url, "GET", "/v1/contexts", { host: "other.internal" })).status).toBe(421);
  });

  it("when the allowed origin preflights and writes, then it gets the CORS headers; another origin gets 403 and none", async () => {
    const host = new URL(opted.url).host;
    const preflight = await raw(opted.url, "OPTIONS", "/v1/contexts", {
      host,
      origin: "https://dashboard.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("https://dashboard.example");
    expect(preflight.headers["access-control-allow-methods"]).toContain("POST");
    expect(preflight.headers["access-control-allow-headers"]).toContain("content-type");
    expect(preflight.headers["access-control-allow-headers"]).toContain("authorization");
    const created = await raw(
      opted.url,
      "POST",
      "/v1/contexts",
      { host, origin: "https://dashboard.example", ...JSON_TYPE },
      "{}",
    );
    expect(created.status).toBe(201);
    expect(created.headers["access-control-allow-origin"]).toBe("https://dashboard.example");
    expect(created.headers["vary"]).toContain("Origin");

    const other = await raw(opted.url, "OPTIONS", "/v1/contexts", {
      host,
      origin: "https://other.example",
      "access-control-request-method": "POST",
    });
    expect(other.status).toBe(403);
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("when an allowed origin or host is not one, then serve refuses to start, naming it", async () => {
    await expect(serve(s.rt, { port: 0, allowOrigins: ["https://dashboard.example/app"] })).rejects.toThrow(
      /allowed origin 'https:\/\/dashboard\.example\/app' is not an origin/,
    );
    await expect(serve(s.rt, { port: 0, allowOrigins: ["dashboard.example"] })).rejects.toThrow(/is not an origin/);
    await expect(serve(s.rt, { port: 0, allowedHosts: ["http://actorzero.internal"] })).rejects.toThrow(
      /allowed host 'http:\/\/actorzero\.internal' is not a host name/,
    );
    await expect(serve(s.rt, { port: 0, allowedHosts: ["actorzero.internal:80"] })).rejects.toThrow(
      /is not a host name/,
    );
  });
});
