// `verify-log` and `fork` on a data dir another process holds go through that process (its control socket), as the
// other commands do, instead of being refused on the lock; over HTTP, a fork is the `act` role's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { api, served } from "../server/support.ts";
import { cli, jsonLines, startCli, type CliProcess } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string };

describe("given actorzero serve holding a data dir with a finished run", () => {
  let dataDir: string;
  let serve: CliProcess;
  let url: string;
  let rootId: string;

  beforeAll(async () => {
    dataDir = await copyPgliteTemplate();
    serve = startCli(["serve", "--data-dir", dataDir, "--offline", "--latency", "0", "--port", "0"]);
    url = /serving (http:\/\/\S+)/.exec(await serve.waitForLine(/^actorzero serving /, 120_000))![1]!;
    rootId = (await api(url, "POST", "/v1/contexts", { name: "source" })).body.id as string;
    const done = await api(url, "POST", `/v1/contexts/${rootId}/messages`, { text: "Plan a picnic", wait: true });
    expect(done.body.status).toBe("completed");
  }, 180_000);
  afterAll(async () => {
    serve.child.kill("SIGTERM");
    await serve.done;
    await removeDir(dataDir);
  });

  it(
    "when verify-log runs against the dir, then the serving process checks the log and its projections and answers",
    { timeout: 120_000 },
    async () => {
      const r = await cli(["verify-log", "--json", "--data-dir", dataDir]);
      expect(r.code, r.stderr).toBe(0);
      const result = JSON.parse(r.stdout) as {
        ok: boolean;
        events: number;
        head: { position: number; hash: string };
        projections: { ok: boolean } | null;
      };
      expect(result).toMatchObject({ ok: true, projections: { ok: true } });
      expect(result.events).toBeGreaterThan(5);
      const anchored = await cli([
        "verify-log",
        "--since",
        `${result.head.position}:${result.head.hash}`,
        "--data-dir",
        dataDir,
      ]);
      expect(anchored.code, anchored.stderr).toBe(0);
      expect(anchored.stdout).toContain("the log only grew since the anchor");
      const wrong = await cli([
        "verify-log",
        "--since",
        `${result.head.position}:${"0".repeat(64)}`,
        "--data-dir",
        dataDir,
      ]);
      expect(wrong.code).toBe(1);
      expect(wrong.stdout).toContain("FAILED");
    },
  );

  it(
    "when fork runs against the dir, then the serving process records the fork and the new root is there",
    { timeout: 120_000 },
    async () => {
      const events = jsonLines<EventJson>(
        (await cli(["events", "--json", "--context", rootId, "--data-dir", dataDir])).stdout,
      );
      const cut = events.find((e) => e.type === "RunStarted")!.position;
      const r = await cli(["fork", rootId.slice(0, 8), "--at", String(cut), "--json", "--data-dir", dataDir]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { contextId: string; forkedFrom: { contextId: string; position: number } };
      expect(out.forkedFrom).toEqual({ contextId: rootId, position: cut });
      const fork = await api(url, "GET", `/v1/contexts/${out.contextId}`);
      expect(fork.status).toBe(200);
      expect(fork.body).toMatchObject({ id: out.contextId, rootContextId: out.contextId });
      // A position that is not one of the context's events is the runtime's refusal, one line.
      const bad = await cli(["fork", rootId, "--at", "999999", "--data-dir", dataDir]);
      expect(bad.code).toBe(1);
      expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    },
  );
});

describe("given a server with named tokens", () => {
  it("when a read token forks, then it is a 403; an act token's fork is a 201", { timeout: 120_000 }, async () => {
    const s = await served(() => ({ text: "ok" }), {
      tokens: [
        { name: "viewer", token: "viewer-secret-0001", role: "read" },
        { name: "worker", token: "worker-secret-0002", role: "act" },
      ],
    });
    try {
      const root = await s.rt.createContext();
      await s.rt.send(root.id, "hello");
      const at = (await s.rt.events({ contextId: root.id })).find((e) => e.type === "MessageReceived")!.globalPosition;
      const asViewer = await api(
        s.url,
        "POST",
        `/v1/contexts/${root.id}/fork`,
        { at },
        { authorization: "Bearer viewer-secret-0001" },
      );
      expect(asViewer.status).toBe(403);
      const asWorker = await api(
        s.url,
        "POST",
        `/v1/contexts/${root.id}/fork`,
        { at },
        { authorization: "Bearer worker-secret-0002" },
      );
      expect(asWorker.status, JSON.stringify(asWorker.body)).toBe(201);
      expect(asWorker.body.id).not.toBe(root.id);
      expect(asWorker.body.rootContextId).toBe(asWorker.body.id);
      const bad = await api(
        s.url,
        "POST",
        `/v1/contexts/${root.id}/fork`,
        { at: "x" },
        { authorization: "Bearer worker-secret-0002" },
      );
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toContain("at:");
    } finally {
      await s.close();
    }
  });
});
