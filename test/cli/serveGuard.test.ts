// `actorzero serve --allowed-host/--allow-origin/--tokens-file`: names, origins and tokens given on the command line,
// bad ones refused before the data dir exists.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { api } from "../server/support.ts";
import { removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError, startCli } from "./support.ts";

const get = async (url: string, headers: Record<string, string>) => {
  const { request } = await import("node:http");
  const u = new URL(url);
  return new Promise<{ status: number; allowOrigin: string | undefined }>((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: "/v1/contexts", headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          allowOrigin: res.headers["access-control-allow-origin"] as string | undefined,
        }),
      );
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
      const r = await cli([
        "serve",
        "--offline",
        "--port",
        "0",
        "--data-dir",
        dataDir,
        "--allow-origin",
        "dashboard.example",
      ]);
      expect(r.code).toBe(1);
      expect(expectOneLineError(r)).toContain("allowed origin 'dashboard.example' is not an origin");
      const h = await cli([
        "serve",
        "--offline",
        "--port",
        "0",
        "--data-dir",
        dataDir,
        "--allowed-host",
        "http://box.internal",
      ]);
      expect(expectOneLineError(h)).toContain("allowed host 'http://box.internal' is not a host name");
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await removeDir(parent);
    }
  });

  it("when the tokens file is missing, not JSON or has a bad entry, then serve exits naming the file and the problem, and creates no data dir", async () => {
    const parent = mkdtempSync(path.join(tmpdir(), "az-tokens-"));
    try {
      const dataDir = path.join(parent, "dir");
      const file = path.join(parent, "tokens.json");
      const attempt = async () =>
        expectOneLineError(
          await cli(["serve", "--offline", "--port", "0", "--data-dir", dataDir, "--tokens-file", file]),
        );
      expect(await attempt()).toContain(`cannot read the tokens file ${file}: ENOENT`);
      writeFileSync(file, "{ tokens: [] }");
      expect(await attempt()).toContain(`the tokens file ${file} is not JSON`);
      writeFileSync(file, JSON.stringify({ tokens: [{ name: "ci", token: "0123456789abcdef", role: "write" }] }));
      expect(await attempt()).toContain(
        `the tokens file ${file}: tokens[0].role: must be one of read, act, approve, admin`,
      );
      writeFileSync(
        file,
        JSON.stringify({ tokens: [{ name: "ci", token: "0123456789abcdef", role: "act", expires: "never" }] }),
      );
      expect(await attempt()).toContain(`tokens[0]: unknown field 'expires'`);
      writeFileSync(file, JSON.stringify({ tokenz: [] }));
      expect(await attempt()).toContain(`unknown field 'tokenz'`);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await removeDir(parent);
    }
  });

  it("when serving with a tokens file, then each token acts within its role only", { timeout: 120_000 }, async () => {
    const parent = mkdtempSync(path.join(tmpdir(), "az-tokens-"));
    const file = path.join(parent, "tokens.json");
    writeFileSync(
      file,
      JSON.stringify({
        tokens: [
          { name: "viewer", token: "viewer-secret-0123456789", role: "read" },
          { name: "ci", token: "ci-secret-0123456789ab", role: "act" },
        ],
      }),
    );
    const serve = startCli(["serve", "--store", "memory", "--offline", "--port", "0", "--tokens-file", file]);
    try {
      const line = await serve.waitForLine(/^actorzero serving /);
      expect(line).toContain("bearer token required: 2 named tokens");
      const url = /serving (http:\/\/\S+)/.exec(line)![1]!;
      const viewer = { authorization: "Bearer viewer-secret-0123456789" };
      expect((await api(url, "GET", "/v1/contexts", undefined, viewer)).status).toBe(200);
      expect((await api(url, "POST", "/v1/contexts", {}, viewer)).status).toBe(403);
      expect(
        (await api(url, "POST", "/v1/contexts", {}, { authorization: "Bearer ci-secret-0123456789ab" })).status,
      ).toBe(201);
      expect((await api(url, "GET", "/v1/contexts")).status).toBe(401);
    } finally {
      serve.child.kill("SIGTERM");
      await serve.done;
      await removeDir(parent);
    }
  });

  it(
    "when serving with --allowed-host and --allow-origin (repeated or comma-separated), then exactly those get in",
    { timeout: 120_000 },
    async () => {
      const serve = startCli([
        "serve",
        "--store",
        "memory",
        "--offline",
        "--port",
        "0",
        "--allowed-host",
        "box.internal",
        "--allow-origin",
        "https://a.example,https://b.example",
        "--allow-origin",
        "https://c.example",
      ]);
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
    },
  );
});
