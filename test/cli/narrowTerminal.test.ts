// Every command on an 80-column terminal: no line wider than the screen (the terminal would wrap it mid-word),
// and a run that waits for a person says so and where to decide.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { startCli, type CliProcess } from "./support.ts";
import { runInTerminal, screenOf } from "./terminal.ts";

const COLUMNS = 80;
const dirs: string[] = [];
let cwd: string;
let dataDir: string;
let holder: CliProcess;
let rootId: string;

/** The screen `args` leaves on an 80-column terminal, and its exit status. */
const onScreen = async (args: string[]) => {
  const r = await runInTerminal(args, { columns: COLUMNS, rows: 50 }, { cwd }).done;
  return { code: r.code, lines: screenOf(r.stdout).filter((l) => l !== ""), stderr: r.stderr };
};

const expectFits = (lines: string[]) => {
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line.length, `${line.length} columns: ${line}`).toBeLessThanOrEqual(COLUMNS);
};

beforeAll(async () => {
  // A config that makes every answer wait for a decision: the run parks with its calls pending.
  cwd = mkdtempSync(join(tmpdir(), "actorzero-narrow-"));
  dirs.push(cwd);
  writeFileSync(join(cwd, "actorzero.config.json"), JSON.stringify({ approvals: { tools: ["response"] } }));
  dataDir = await copyPgliteTemplate();
  dirs.push(dataDir);
  holder = startCli(
    ["run", "--events", "--data-dir", dataDir, "Plan the launch of a small open-source note-taking app"],
    { cwd },
  );
  const created = await holder.waitForLine(/ A0 default .* ContextCreated /, 120_000);
  rootId = /A0 default\s+([0-9a-f]{8})/.exec(created)![1]!;
  await holder.waitForLine(/ ApprovalRequested /, 120_000);
}, 180_000);
afterAll(async () => {
  holder.child.kill("SIGKILL");
  await holder.done;
  for (const dir of dirs) await removeDir(dir);
});

describe("given a run parked on approvals, read from an 80-column terminal", () => {
  it("when contexts lists it, then every line fits and the waiting context says it awaits approval", async () => {
    const { code, lines } = await onScreen(["contexts", "--data-dir", dataDir]);
    expect(code).toBe(0);
    expectFits(lines);
    expect(lines[0]).toMatch(/^CONTEXT\s+AGENT\s+.*STATUS/);
    expect(lines.some((l) => l.includes("running (awaiting approval)"))).toBe(true);
    expect(lines.some((l) => l.startsWith(rootId))).toBe(true);
  });

  it("when approvals lists them, then every line fits, ids shortened to a prefix approve accepts", async () => {
    const { code, lines } = await onScreen(["approvals", "--data-dir", dataDir]);
    expect(code).toBe(0);
    expectFits(lines);
    const row = lines.find((l) => l.includes("awaiting approval"))!;
    expect(row).toMatch(/^[0-9a-f]{8}\s/);
    expect(lines.join(" ")).toContain("actorzero approve <approval>");
  });

  it("when the tree is audited, then every line fits, long texts wrapped between words", async () => {
    const { code, lines } = await onScreen(["audit", rootId, "--data-dir", dataDir]);
    expect(code).toBe(0);
    expectFits(lines);
    expect(lines[0]).toMatch(/^Audit of A0 default/);
  });

  it("when its events are printed, then every line fits", async () => {
    const { code, lines } = await onScreen(["events", "--data-dir", dataDir]);
    expect(code).toBe(0);
    expectFits(lines);
    expect(lines.filter((l) => /^\s+\d+\s{2}\d\d:\d\d/.test(l)).length).toBeGreaterThan(10);
  });

  it("when any help page is shown, then every line fits", { timeout: 240_000 }, async () => {
    const pages = [
      ["--help"],
      ...[
        "run",
        "contexts",
        "tree",
        "events",
        "replay",
        "verify-log",
        "approvals",
        "approve",
        "reject",
        "fork",
        "serve",
        "audit",
        "send",
        "stop",
        "pause",
      ].map((c) => [c, "--help"]),
    ];
    for (let i = 0; i < pages.length; i += 4) {
      await Promise.all(
        pages.slice(i, i + 4).map(async (args) => {
          const { code, lines } = await onScreen(args);
          expect(code, args.join(" ")).toBe(0);
          expectFits(lines);
        }),
      );
    }
  });
});

describe("given a run on an 80-column terminal whose calls wait for a decision", () => {
  it("when it parks, then the live tree says awaiting approval and points to actorzero approvals; after Ctrl-C the report fits", async () => {
    const own = await copyPgliteTemplate();
    dirs.push(own);
    const run = runInTerminal(
      ["run", "--data-dir", own, "Write a haiku about logs"],
      { columns: COLUMNS, rows: 40 },
      { cwd },
    );
    const during = screenOf(await run.waitFor((out) => screenOf(out).some((l) => l.includes("actorzero approvals"))));
    expectFits(during.filter((l) => l !== ""));
    expect(during.some((l) => /^\W*A\d.*running \(awaiting approval\)/.test(l))).toBe(true);
    expect(during.some((l) => /^awaiting approval: A\d/.test(l))).toBe(true);
    run.type("\x03");
    const ended = await run.done;
    const after = screenOf(ended.stdout).filter((l) => l !== "");
    expectFits(after);
    expect(after.join("\n")).toMatch(/Look further\n {2}the full story[^\n]*\n {4}npx actorzero audit [0-9a-f]{8}/);
  }, 120_000);
});

describe("given the same parked run, decided from another process", () => {
  it("when reject has no --reason, then it is a usage error (exit 2) and nothing is decided", async () => {
    const r = await onScreen(["reject", "0", "--data-dir", dataDir]);
    expect(r.code).toBe(2);
    expect(r.stderr + r.lines.join("\n")).toMatch(/reject needs --reason/);
  });

  it("when approve gets the prefix approvals shows, then the holder records the decision for the whole id", async () => {
    const { lines } = await onScreen(["approvals", "--data-dir", dataDir]);
    const prefix = lines.find((l) => l.includes("awaiting approval"))!.slice(0, 8);
    const r = await onScreen(["approve", prefix, "--data-dir", dataDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.lines.join("\n")).toMatch(new RegExp(`approval ${prefix}[0-9a-f-]{28} granted by`));
    expect(await holder.waitForLine(/ ApprovalGranted /)).toBeTruthy();
  });
});
