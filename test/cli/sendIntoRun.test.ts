// `send` from another terminal into a `run` in flight: the run takes the message as an intervention, and the `run`
// process exits as soon as that run ends, which is also the moment `send` is waiting for.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, linePositions, startCli, type CliProcess, type CliResult } from "./support.ts";

describe("given actorzero run in flight and a send into its root from another process", () => {
  let dataDir: string;
  let run: CliProcess;
  let sent: CliResult;
  let ran: CliResult;

  beforeAll(async () => {
    dataDir = await copyPgliteTemplate();
    // Slow model calls keep the root running while the message arrives; the run ends soon after.
    run = startCli(["run", "--events", "--latency", "6000", "--data-dir", dataDir, "Write a haiku about logs"]);
    const created = await run.waitForLine(/ A0 default .* ContextCreated /, 120_000);
    const rootId = /A0 default\s+([0-9a-f]{8})/.exec(created)![1]!;
    sent = await cli(["send", rootId, "also mention rain", "--events", "--data-dir", dataDir]);
    ran = await run.done;
  }, 240_000);
  afterAll(async () => {
    run.child.kill("SIGKILL");
    await removeDir(dataDir);
  });

  it("when the run ends with the message taken, then send exits 0 and reports the run as the run's process does", () => {
    expect(ran.code, ran.stderr).toBe(0);
    expect(sent.stderr).not.toMatch(/went away/);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/ A0 default .* InterventionReceived\s+"also mention rain"/);
    expect(sent.stdout).toMatch(/Noted from you meanwhile: “also mention rain”/);
  });

  it("when the run's process exits before streaming the last events, then send still shows every one of them, in order", () => {
    const shown = linePositions(sent.stdout);
    const all = linePositions(ran.stdout);
    expect(shown.length).toBeGreaterThan(0);
    // From the first event send saw to the run's last one, without a gap: the tail is read from the freed log.
    expect(shown).toEqual(all.slice(all.indexOf(shown[0]!)));
    expect(sent.stdout).toMatch(/ A0 default .* RunCompleted /);
  });
});
