// `events --follow` on a PGlite data dir behaves like `tail -f`: with no process holding the dir it waits (holding
// nothing, so a run can start), follows each run's process while it holds the dir, and goes on waiting after it exits.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, jsonLines, startCli, type CliProcess, type CliResult } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string };

/** Resolves once the process has written a stderr line matching `pattern` (so far or later). */
const stderrLine = (p: CliProcess, pattern: RegExp, timeoutMs = 120_000) =>
  new Promise<void>((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(
      () => reject(new Error(`no stderr line matching ${pattern}; stderr:\n${seen}`)),
      timeoutMs,
    );
    const check = (d: Buffer) => {
      seen += d.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        p.child.stderr!.off("data", check);
        resolve();
      }
    };
    p.child.stderr!.on("data", check);
  });

/** A run of a few seconds (300 ms per model call), so a follower polling the socket sees its process hold the dir. */
const runJson = async (dataDir: string, task: string) => {
  const r = await cli(["run", "--offline", "--latency", "300", "--json", "--data-dir", dataDir, task]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { contextId: string };
};

describe("given a data dir no process holds", () => {
  let dataDir: string;
  let follower: CliProcess;
  let first: { contextId: string };
  let second: { contextId: string };
  let third: { contextId: string };
  let aliveBetween = false;
  let followed: CliResult;
  let all: EventJson[];

  beforeAll(async () => {
    dataDir = await copyPgliteTemplate();
    first = await runJson(dataDir, "A first task before anyone follows");
    follower = startCli(["events", "--follow", "--json", "--data-dir", dataDir]);
    const waiting = stderrLine(follower, /waiting for one .* to follow after position \d+/);
    await follower.waitForLine(new RegExp(`"streamId":"${first.contextId}"`), 180_000);
    await waiting;
    // A run can take the dir while the follower waits: the follower holds nothing.
    const left = stderrLine(follower, /closed it; waiting for the next one/);
    second = await runJson(dataDir, "A second task while it follows");
    await follower.waitForLine(new RegExp(`"streamId":"${second.contextId}"`), 180_000);
    // What the holder appends after its stream ended comes with the next holder's stream, from the last position printed.
    await left;
    aliveBetween = follower.child.exitCode === null;
    third = await runJson(dataDir, "A third task after that one exited");
    await follower.waitForLine(new RegExp(`"streamId":"${third.contextId}"`), 180_000);
    follower.child.kill("SIGINT");
    followed = await follower.done;
    all = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
  }, 400_000);
  afterAll(async () => {
    follower?.child.kill("SIGKILL");
    await removeDir(dataDir);
  });

  it("when events --follow starts, then it prints the log so far and waits instead of exiting", () => {
    const seen = jsonLines<EventJson>(followed.stdout);
    expect(seen.some((e) => e.streamId === first.contextId && e.type === "ContextCreated")).toBe(true);
    expect(aliveBetween).toBe(true);
  });

  it("when runs come and go, then it follows each and prints every event once, in order, until Ctrl-C", () => {
    expect(followed.code, followed.stderr).toBe(0);
    const seen = jsonLines<EventJson>(followed.stdout);
    const positions = seen.map((e) => e.position);
    // Every event once, in log order, with none skipped up to the last one printed.
    expect(positions).toEqual(all.map((e) => e.position).slice(0, positions.length));
    for (const root of [first.contextId, second.contextId, third.contextId])
      expect(seen.some((e) => e.streamId === root)).toBe(true);
  });
});
