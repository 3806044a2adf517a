// `npm start` with no arguments, from a fresh checkout's directory: the offline demo on ./.actorzero.
import { cp, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { inject } from "vitest";
import { afterAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError } from "./support.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("when started with no arguments", () => {
  it("runs the demo task offline on ./.actorzero and ends with the audit tree and where to look next", async () => {
    const cwd = await mkdtemp(path.join(os.tmpdir(), "actorzero-start-"));
    dirs.push(cwd);
    // The template stands in for the first initdb, which is slow and is PGlite's, not ours.
    await cp(inject("actorzeroPgliteTemplate").dir, path.join(cwd, ".actorzero"), { recursive: true });
    const r = await cli([], { cwd });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("offline demo model");
    expect(r.stdout).toContain("log: data dir ./.actorzero");
    expect(r.stdout).toContain("(the demo task)");
    expect(r.stdout).toMatch(/Tree\nAGENT +PROFILE +NAME +STATUS/);
    expect(r.stdout).toMatch(/└─ A1 +developer/);
    expect(r.stdout).toMatch(/npx actorzero audit [0-9a-f]{8} +the full story/);
  });
});

describe("help", () => {
  it("lists the commands, and each command's flags", async () => {
    const [top, audit, bad] = await Promise.all([cli(["--help"]), cli(["audit", "--help"]), cli(["frobnicate"])]);
    expect(top.code).toBe(0);
    for (const c of ["run", "contexts", "tree", "audit", "events", "replay", "send", "stop"])
      expect(top.stdout).toMatch(new RegExp(`^  ${c} `, "m"));
    expect(audit.code).toBe(0);
    expect(audit.stdout).toContain("--full");
    expect(audit.stdout).toContain("--data-dir <dir>");
    expect(bad.code).toBe(2);
    expect(expectOneLineError(bad)).toContain("unknown command 'frobnicate'");
  });
});
