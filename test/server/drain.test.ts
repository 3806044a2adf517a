// `actorzero serve` as its own process: SIGTERM with a run in flight drains, records the run interrupted, exits 0.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/index.ts";
import { cli, cliEnv, startCli } from "../cli/support.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { api, sse } from "./support.ts";

let dataDir: string;
beforeAll(async () => (dataDir = await copyPgliteTemplate()));
afterAll(async () => removeDir(dataDir));

describe("given actorzero serve in its own process", () => {
  it("when it gets SIGTERM while a run is in flight, then a waiting request hears its run was interrupted, the run is recorded interrupted, and it exits 0", async () => {
    const proc = startCli(["serve", "--data-dir", dataDir, "--offline", "--latency", "5000", "--port", "0"]);
    const line = await proc.waitForLine(/^actorzero serving /);
    const url = /serving (http:\/\/\S+)/.exec(line)![1]!;
    const id = (await api(url, "POST", "/v1/contexts", {})).body.id as string;
    const stream = await sse(`${url}/v1/events/stream?contextId=${id}`);
    const waiting = api(url, "POST", `/v1/contexts/${id}/messages`, { text: "plan something", wait: true });
    // The run is in flight once its first model call is recorded (the demo model then waits ~5 s).
    const seen = await stream.collect((e) => e.event === "ModelCalled");
    const runId = JSON.parse(seen.find((e) => e.event === "RunStarted")!.data).data.runId as string;
    proc.child.kill("SIGTERM");
    const answer = await waiting;
    // The waiting request hears how its run ended: interrupted by the shutdown, as the log records it.
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ runId, contextId: id, status: "failed", failure: { reason: "interrupted" } });
    // The stream ends with the drain rather than hanging.
    expect(await stream.collect(() => false)).toBeDefined();
    const result = await proc.done;
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({
      code: 0,
      stderr: expect.stringContaining("draining"),
    });
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();

    const store = await openPgliteStore({ dataDir });
    try {
      const types = (await store.readStream(id)).map((e) => e.type);
      expect(types.at(-1)).toBe("RunInterrupted");
      const last = (await store.readStream(id)).at(-1)!;
      expect(last.type === "RunInterrupted" && last.data.runId).toBe(runId);
    } finally {
      await store.close();
    }
  });

  it("when asked to bind a non-loopback address without a token, then it refuses with exit 1 and opens nothing", async () => {
    const result = await cli(["serve", "--data-dir", dataDir, "--host", "0.0.0.0", "--port", "0"], { env: cliEnv() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without a token/);
  });
});

describe("given actorzero serve holding a PGlite data dir", () => {
  it("when another process asks over the control socket in the data dir, then it gets the same API", async () => {
    const { request } = await import("node:http");
    const { join } = await import("node:path");
    const { existsSync } = await import("node:fs");
    const proc = startCli(["serve", "--data-dir", dataDir, "--offline", "--port", "0"]);
    const line = await proc.waitForLine(/^actorzero serving /);
    const url = /serving (http:\/\/\S+)/.exec(line)![1]!;
    const created = (await api(url, "POST", "/v1/contexts", { name: "via-tcp" })).body.id as string;
    const socketPath = join(dataDir, "control.sock");
    const viaSocket = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request({ socketPath, path: `/v1/contexts/${created}`, method: "GET" }, (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on("error", reject);
      req.end();
    });
    expect(viaSocket.status).toBe(200);
    expect(viaSocket.body).toMatchObject({ id: created, name: "via-tcp" });
    proc.child.kill("SIGTERM");
    expect((await proc.done).code).toBe(0);
    expect(existsSync(socketPath)).toBe(false);
  });
});
