// The CLI reaches the process that holds a PGlite data dir through its control socket: a `run` in flight is read,
// paused, resumed, followed and stopped from other processes; `send` runs through `serve`.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContextRow } from "../../src/cli/commands/contexts.ts";
import type { TreeJson } from "../../src/cli/commands/tree.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { api } from "../server/support.ts";
import { cli, jsonLines, startCli, type CliProcess, type CliResult } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string; data: Record<string, unknown> };

describe("given actorzero run in flight holding a data dir", () => {
  let dataDir: string;
  let run: CliProcess;
  let follow: CliProcess;
  let rootId: string;
  let tree: CliResult,
    paused: CliResult,
    resumed: CliResult,
    again: CliResult,
    audit: CliResult,
    stop: CliResult,
    ended: CliResult,
    followed: CliResult;

  beforeAll(async () => {
    dataDir = await copyPgliteTemplate();
    // Very slow model calls (30 to 90 s each, five in a row) keep the tree at work until the stop comes.
    run = startCli(["run", "--events", "--latency", "60000", "--data-dir", dataDir, "Write a haiku about logs"]);
    const created = await run.waitForLine(/ A0 default .* ContextCreated /, 180_000);
    rootId = /A0 default\s+([0-9a-f]{8})/.exec(created)![1]!;
    follow = startCli(["events", "--follow", "--json", "--data-dir", dataDir]);
    const holderLeft = new Promise<void>((resolve) => {
      let text = "";
      follow.child.stderr!.on("data", (d: Buffer) => {
        text += d.toString();
        if (text.includes("closed it; waiting for the next one")) resolve();
      });
    });
    [tree, audit] = await Promise.all([
      cli(["tree", "--json", "--data-dir", dataDir]),
      cli(["audit", rootId, "--json", "--data-dir", dataDir]),
    ]);
    paused = await cli(["pause", rootId, "--data-dir", dataDir]);
    resumed = await cli(["resume", rootId, "--data-dir", dataDir]);
    again = await cli(["resume", rootId, "--data-dir", dataDir]);
    stop = await cli(["stop", rootId, "--data-dir", dataDir]);
    ended = await run.done;
    // A follower outlives the run's process, as `tail -f` does a file: it waits for the next holder until Ctrl-C.
    await holderLeft;
    follow.child.kill("SIGINT");
    followed = await follow.done;
  }, 300_000);
  afterAll(async () => {
    run.child.kill("SIGKILL");
    follow?.child.kill("SIGKILL");
    await removeDir(dataDir);
  });

  it("when another process reads the tree, then it gets it through the run's process, the root running", () => {
    expect(tree.code, tree.stderr).toBe(0);
    const [root] = JSON.parse(tree.stdout) as TreeJson[];
    expect(root).toMatchObject({ shownStatus: "running", task: "Write a haiku about logs" });
    expect(root!.id.startsWith(rootId)).toBe(true);
  });

  it("when another process pauses and resumes the root, then the run's process records both and says so", () => {
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(new RegExp(`A0 default ${rootId} is paused \\(running\\)`));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`A0 default ${rootId} resumed \\(running\\): its run goes on`));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`A0 default ${rootId} was not paused \\(running\\): nothing changed`));
    expect(ended.stdout).toMatch(/ A0 default .* ContextPaused\b/);
    expect(ended.stdout).toMatch(/ A0 default .* ContextResumed\b/);
  });

  it("when another process audits the root, then it gets the report from the run's process", () => {
    expect(audit.code, audit.stderr).toBe(0);
    expect(JSON.parse(audit.stdout).context.id.startsWith(rootId)).toBe(true);
  });

  it("when another process stops the root, then the run is recorded stopped by the user, stop exits 0 and run exits 1 saying what stopped", async () => {
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain(`A0 default ${rootId} stopped, with every subordinate that was running below it`);
    expect(ended.code, ended.stderr).toBe(1);
    expect(ended.stdout).toMatch(new RegExp(`^Stopped: A0 default ${rootId}.*\\(recorded as stopped\\)`, "m"));
    // Both processes are gone: the dir is free, its socket removed, and the log read here says the same.
    expect(existsSync(join(dataDir, "control.sock"))).toBe(false);
    const events = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
    const rootStop = events.find((e) => e.type === "RunStopped" && e.streamId.startsWith(rootId));
    expect(rootStop?.data["by"]).toBe("user");
    expect(events.some((e) => e.type === "RunInterrupted")).toBe(false);
  });

  it("when another process follows the log, then it sees the run's events live, in order, and waits for the next holder after the run's process exits", () => {
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stderr).toContain("closed it; waiting for the next one");
    const seen = jsonLines<EventJson>(followed.stdout);
    const positions = seen.map((e) => e.position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(positions).size).toBe(positions.length);
    expect(seen.some((e) => e.type === "RunStopped" && e.data["by"] === "user")).toBe(true);
  });
});

describe("given actorzero serve holding a data dir", () => {
  it(
    "when send is run against the dir, then the message runs in the serving process and send reports it as a local run",
    { timeout: 180_000 },
    async () => {
      const dataDir = await copyPgliteTemplate();
      const serve = startCli(["serve", "--data-dir", dataDir, "--offline", "--latency", "20", "--port", "0"]);
      try {
        const line = await serve.waitForLine(/^actorzero serving /);
        const url = /serving (http:\/\/\S+)/.exec(line)![1]!;
        const id = (await api(url, "POST", "/v1/contexts", { name: "via-socket" })).body.id as string;
        const sent = await cli(["send", id.slice(0, 8), "Plan a picnic", "--json", "--data-dir", dataDir]);
        expect(sent.code, sent.stderr).toBe(0);
        const out = JSON.parse(sent.stdout);
        expect(out).toMatchObject({ contextId: id, status: "completed" });
        // The serving process ran it: its API shows the run that send reported.
        const view = (await api(url, "GET", `/v1/contexts/${id}`)).body;
        expect(view.lastRun).toMatchObject({ runId: out.runId, status: "completed" });
        const rows = JSON.parse((await cli(["contexts", "--json", "--data-dir", dataDir])).stdout) as ContextRow[];
        expect(rows.find((r) => r.id === id)).toMatchObject({ shownStatus: "completed", task: "Plan a picnic" });
      } finally {
        // How serve drains on SIGTERM is test/server/drain.test.ts's subject; here it only has to go away.
        serve.child.kill("SIGTERM");
        await serve.done;
        await removeDir(dataDir);
      }
    },
  );
});
