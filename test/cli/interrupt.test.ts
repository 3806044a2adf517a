// Ctrl-C during a run: the whole tree stops, recorded; other processes reach a run through it (test/cli/control.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContextRow } from "../../src/cli/commands/contexts.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, jsonLines, linePositions, startCli, type CliProcess, type CliResult } from "./support.ts";

let dataDir: string;
let run: CliProcess;
let ended: CliResult;

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  // Slow model calls, so the tree is still at work when the other process comes and when Ctrl-C arrives.
  run = startCli(["run", "--events", "--latency", "3000", "--data-dir", dataDir, "Write a haiku about logs"]);
  // Ctrl-C while A2 calls its model: A0 waits on its jobs, the researcher A1 on A2.
  await run.waitForLine(/ A2 researcher .* ModelCalled /, 90_000);
  run.child.kill("SIGINT");
  ended = await run.done;
});
afterAll(async () => {
  run.child.kill("SIGKILL");
  await removeDir(dataDir);
});

describe("when the run gets Ctrl-C", () => {
  it("stops the whole tree, says so, and exits 130", () => {
    expect(ended.code, ended.stderr).toBe(130);
    expect(ended.stderr).toContain("stopping the whole tree");
    expect(ended.stdout).toMatch(/^Stopped: A0 default [0-9a-f]{8}.* \(recorded as stopped\)/m);
  });

  it("names what it stopped and what had already ended", async () => {
    const rows = JSON.parse((await cli(["contexts", "--json", "--data-dir", dataDir])).stdout) as ContextRow[];
    const line = /^Stopped: .*$/m.exec(ended.stdout)![0];
    const [stoppedPart, endedPart = ""] = line.split("; already ended before the stop: ");
    for (const r of rows) {
      if (r.shownStatus === "stopped") expect(stoppedPart).toContain(r.id.slice(0, 8));
      else expect(endedPart).toContain(`${r.id.slice(0, 8)} (completed)`);
    }
  });

  it("leaves every context stopped or completed, none running, and the log intact", async () => {
    const rows = JSON.parse((await cli(["contexts", "--json", "--data-dir", dataDir])).stdout) as ContextRow[];
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const r of rows) expect(["stopped", "completed"]).toContain(r.shownStatus);
    expect(rows.find((r) => r.agentNumber === 0)!.shownStatus).toBe("stopped");

    const events = jsonLines<{ position: number; type: string; data: Record<string, unknown> }>(
      (await cli(["events", "--json", "--data-dir", dataDir])).stdout,
    );
    // Everything the run printed as it happened is in the log, and nothing else.
    expect(linePositions(ended.stdout)).toEqual(events.map((e) => e.position));
    const stops = events.filter((e) => e.type === "RunStopped");
    expect(stops.length).toBe(rows.filter((r) => r.shownStatus === "stopped").length);
    // The user stopped A0 only; the stop went down the tree.
    expect(stops.filter((e) => e.data["by"] === "user")).toHaveLength(1);
    expect(stops.filter((e) => e.data["by"] === "superior").length).toBeGreaterThanOrEqual(1);
    expect(events.some((e) => e.type === "RunInterrupted")).toBe(false);

    const verify = await cli(["replay", "--verify", "--data-dir", dataDir]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });
});
