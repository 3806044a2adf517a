// `actorzero serve --allowed-host/--allow-origin`: names and origins opted in on the command line, bad ones refused
// before the data dir exists.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError, startCli } from "./support.ts";

const get = async (url: string, headers: Record<string, string>) => {
  const { request } = await import("node:http");
  const u = new URL(url);
  return new Promise<{ status: number; allowOrigin: string | undefined }>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: "/v1/contexts", headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, allowOrigin: res.headers["access-control-allow-origin"] as string | undefined }));
    });
    req.on("error", reject);
    req.end();
  });
};

describe("actorzero serve with names and origins opted in", () => {
  it("when an origin or host given is not one, then it exits with a one-line error naming it and creates no data dir", async () => {
    const parent = mkdtempSync(path.join(tmpdir(), "az-guard-"));
    try {
      const dataDir = path.join(parent, "dir");
      const r = await cli(["serve", "--offline", "--port", "0", "--data-dir", dataDir, "--allow-origin", "dashboard.example"]);
      expect(r.code).toBe(1);
      expect(expectOneLineError(r)).toContain("allowed origin 'dashboard.example' is not an origin");
      const h = await cli(["serve", "--offline", "--port", "0", "--data-dir", dataDir, "--allowed-host", "http://box.internal"]);
      expect(expectOneLineError(h)).toContain("allowed host 'http://box.internal' is not a host name");
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await removeDir(parent);
    }
  });

  it("when serving with --allowed-host and --allow-origin (repeated or comma-separated), then exactly those get in", { timeout: 120_000 }, async () => {
    const serve = startCli(["serve", "--store", "memory", "--offline", "--port", "0", "--allowed-host", "box.internal", "--allow-origin", "https://a.example,https://b.example", "--allow-origin", "https://c.example"]);
    try {
      const url = /serving (http:\/\/\S+)/.exec(await serve.waitForLine(/^actorzero serving /))![1]!;
      expect((await get(url, { host: "box.internal:7077" })).status).toBe(200);
      expect((await get(url, { host: "evil.example" })).status).toBe(421);
      const host = new URL(url).host;
      for (const origin of ["https://a.example", "https://b.example", "https://c.example"]) {
        expect(await get(url, { host, origin })).toEqual({ status: 200, allowOrigin: origin });
      }
      expect((await get(url, { host, origin: "https://d.example" })).status).toBe(403);
    } finally {
      serve.child.kill("SIGTERM");
      await serve.done;
    }
  });
});
