// On PostgreSQL, stop, pause and resume of a run another process drives: a request recorded in the log, delivered
// to that process at once (LISTEN/NOTIFY), acted on there, and reported by the command that asked.
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { cli, jsonLines, startCli, type CliProcess, type CliResult } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string; data: Record<string, unknown> };

describeWithPostgres("given actorzero run in flight on PostgreSQL", () => {
  const db = usePostgresDatabase("actorzero_control");
  let run: CliProcess;
  let rootId: string;
  let paused: CliResult, resumed: CliResult, stop: CliResult, ended: CliResult;

  beforeAll(async () => {
    const store = ["--store", db.url()];
    // Very slow model calls (30 to 90 s each, five in a row) keep the tree at work until the stop comes.
    run = startCli(["run", "--events", "--latency", "60000", ...store, "Write a haiku about logs"]);
    const line = await run.waitForLine(/ A0 default .* ModelCalled/, 180_000);
    rootId = /A0 default\s+([0-9a-f]{8})/.exec(line)![1]!;
    paused = await cli(["pause", rootId, "--json", ...store]);
    resumed = await cli(["resume", rootId, "--json", ...store]);
    stop = await cli(["stop", rootId, ...store]);
    ended = await run.done;
  }, 400_000);
  afterAll(() => {
    run.child.kill("SIGKILL");
  });

  it("when another process pauses and resumes the root, then the driving process records both and the commands report them", () => {
    expect(paused.code, paused.stderr).toBe(0);
    expect(JSON.parse(paused.stdout)).toMatchObject({ paused: true, status: "running" });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ paused: false, status: "running" });
    expect(ended.stdout).toMatch(/ A0 default .* ContextPaused/);
    expect(ended.stdout).toMatch(/ A0 default .* ContextResumed/);
  });

  it("when another process stops the root, then the request is in the log, the driver records RunStopped by the user, and both report it", async () => {
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain(`A0 default ${rootId} stopped, with every subordinate that was running below it`);
    expect(ended.code, ended.stderr).toBe(1);
    expect(ended.stdout).toMatch(new RegExp(`^Stopped: A0 default ${rootId}.*\\(recorded as stopped\\)`, "m"));
    const events = jsonLines<EventJson>((await cli(["events", "--json", "--store", db.url()])).stdout);
    const requests = events.filter((e) => e.type === "RunControlRequested");
    expect(requests.map((e) => e.data["action"])).toEqual(["pause", "resume", "stop"]);
    for (const r of requests) expect(r.streamId).toBe(`${r.data["contextId"]}:control`);
    const stopped = events.find((e) => e.type === "RunStopped" && e.streamId.startsWith(rootId))!;
    expect(stopped.data["by"]).toBe("user");
    expect(stopped.position).toBeGreaterThan(requests.at(-1)!.position);
    // The request went to the process that drove the run: nothing else wrote the root's stream.
    expect(events.some((e) => e.type === "RunInterrupted")).toBe(false);
  });
});
