// `actorzero approve` / `reject` on a real data dir: a run parked by a process that has exited goes on in the CLI's
// process after the decision; refusals are one line, exit 1, and write nothing.
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli } from "./support.ts";

let dataDir: string;
let contextId: string;
let approvalId: string;

/** A run parked in a child process that then closes its runtime and exits (test/runtime/approvalChild.ts). */
const parkAndExit = async (dir: string): Promise<[string, string]> => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL("../runtime/approvalChild.ts", import.meta.url).pathname, dir, "close"],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  const line = out.split("\n").find((l) => l.startsWith("parked "));
  if (code !== 0 || !line) throw new Error(`the child did not park (${code}): ${out}`);
  return line.split(" ").slice(1, 3) as [string, string];
};

const eventTypes = async () => {
  const store = await openPgliteStore({ dataDir });
  try {
    return (await store.readStream(contextId)).map((e) => e.type);
  } finally {
    await store.close();
  }
};

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  [contextId, approvalId] = await parkAndExit(dataDir);
});
afterAll(async () => removeDir(dataDir));

describe("given a data dir with a run parked awaiting approval", { timeout: 240_000 }, () => {
  it("when a decision is malformed, then it is refused in one line (a usage error without --reason) and nothing is written", async () => {
    const before = await eventTypes();
    const notAnId = await cli(["approve", "12345", "--data-dir", dataDir]);
    expect([notAnId.code, notAnId.stderr.trim()]).toEqual([
      1,
      "actorzero: no pending approval starts with '12345' (see actorzero approvals)",
    ]);
    const notHex = await cli(["approve", "pending", "--data-dir", dataDir]);
    expect([notHex.code, notHex.stderr.trim()]).toEqual([
      1,
      "actorzero: 'pending' is not an approval id (see actorzero approvals)",
    ]);
    const noReason = await cli(["reject", approvalId.slice(0, 8), "--data-dir", dataDir]);
    expect([noReason.code, noReason.stderr.trim()]).toEqual([
      2,
      expect.stringMatching(/^actorzero: reject needs --reason <text>/),
    ]);
    const unknown = await cli(["approve", "00000000-0000-4000-8000-000000000000", "--data-dir", dataDir]);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      1,
      expect.stringMatching(/No approval '00000000-0000-4000-8000-000000000000' was requested/),
    ]);
    expect(await eventTypes()).toEqual(before);
    expect(before).not.toContain("RunInterrupted");
  });

  it("when it is rejected with a reason, then the decision is recorded by the OS user or --by, the run goes on to its end, and a second decision is refused", async () => {
    const listed = await cli(["approvals", "--json", "--data-dir", dataDir]);
    expect(JSON.parse(listed.stdout).map((a: { approvalId: string }) => a.approvalId)).toEqual([approvalId]);
    // The views say what the running context waits on.
    for (const view of ["contexts", "tree"])
      expect((await cli([view, "--data-dir", dataDir])).stdout).toMatch(/running \(awaiting approval\)/);
    const r = await cli([
      "reject",
      approvalId.slice(0, 8),
      "--reason",
      "change freeze",
      "--by",
      "carol",
      "--json",
      "--data-dir",
      dataDir,
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ approvalId, status: "denied" });
    const types = await eventTypes();
    expect(types).toContain("ApprovalDenied");
    // The run went on in the CLI's process and ended there (its end is on the log, not an interruption).
    expect(types.at(-1)).toMatch(/^Run(Completed|Failed)$/);
    const store = await openPgliteStore({ dataDir });
    try {
      const denied = (await store.readStream(contextId)).find((e) => e.type === "ApprovalDenied")!;
      expect(denied.data).toMatchObject({ by: "carol", reason: "change freeze" });
    } finally {
      await store.close();
    }
    expect((await cli(["contexts", "--data-dir", dataDir])).stdout).not.toMatch(/awaiting approval/);
    const again = await cli(["approve", approvalId, "--data-dir", dataDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already denied by carol/);
  });
});
