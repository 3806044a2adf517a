// export-fixture, check-fixtures and replay-run as a user runs them: separate processes over a data dir.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseFixture } from "../../src/fixtures/format.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { startFakeOpenAIServer } from "../support/fakeOpenAIServer.ts";
import { cli, cliEnv, expectOneLineError } from "./support.ts";

const PROMPTS = new URL("../../prompts", import.meta.url).pathname;

let dataDir: string;
let work: string;
let rootId: string;
let answer: string;
const at = (...parts: string[]) => path.join(work, ...parts);

/** A copy of the bundled prompts, changed by `edit` (given the copy's folder). */
const promptsCopy = (name: string, edit: (dir: string) => void): string => {
  const dir = at(name);
  cpSync(PROMPTS, dir, { recursive: true });
  edit(dir);
  return dir;
};

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  work = mkdtempSync(path.join(os.tmpdir(), "az-fixtures-cli-"));
  const run = await cli(["run", "--offline", "--json", "--data-dir", dataDir]);
  expect(run.code, run.stderr).toBe(0);
  ({ contextId: rootId, response: answer } = JSON.parse(run.stdout) as { contextId: string; response: string });
  mkdirSync(at("fixtures"));
});
afterAll(async () => {
  await removeDir(dataDir);
  rmSync(work, { recursive: true, force: true });
});

// Each step starts CLI processes (two for some): slow on a busy machine, so a longer limit than the default.
describe("given the offline demo's tree in a data dir", { timeout: 180_000 }, () => {
  it("when it is exported with --tree --out, then the file is a fixture of the whole tree with its answer", async () => {
    const r = await cli([
      "export-fixture",
      rootId.slice(0, 8),
      "--tree",
      "--out",
      at("fixtures", "demo.json"),
      "--data-dir",
      dataDir,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("4 context(s), 6 model call(s), 6 tool call(s) (fixture format 2)");
    const fixture = parseFixture(JSON.parse(readFileSync(at("fixtures", "demo.json"), "utf8")));
    expect(fixture.contexts.map((c) => c.path)).toEqual([
      "A0",
      "A0/researcher",
      "A0/researcher/fact-checker",
      "A0/developer",
    ]);
    expect(fixture.contexts[0]!.answers).toEqual([answer]);
    writeFileSync(at("fixtures", "notes.json"), JSON.stringify({ not: "a fixture" }));
  });

  it("when check-fixtures replays the folder, then the fixture replays as recorded and it exits 0", async () => {
    const r = await cli(["check-fixtures", at("fixtures")]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("ok     demo.json  (6 model calls replayed)");
    expect(r.stdout).toContain("1 fixture(s): 1 replayed as recorded");
  });

  it("when one prompt file changed, then check-fixtures exits 1 naming the fixture, the model call and the changed line", async () => {
    const prompts = promptsCopy("changed-prompts", (dir) => {
      const file = path.join(dir, "system", "01-role.md");
      writeFileSync(file, readFileSync(file, "utf8").replace("Solve the task you are given.", "Solve the given task."));
    });
    const r = await cli(["check-fixtures", at("fixtures"), "--prompts", prompts]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("DRIFT  demo.json");
    expect(r.stdout).toContain("at A0, model call 1:");
    expect(r.stdout).toMatch(
      /message 0 \(system\) changed:\n\s+- line 2: Solve the task you are given\. .*\n\s+\+ line 2: Solve the given task\. /,
    );
    const json = JSON.parse((await cli(["check-fixtures", at("fixtures"), "--prompts", prompts, "--json"])).stdout) as {
      ok: boolean;
      fixtures: { file: string; drift: { kind: string; path: string; step: number }[] }[];
    };
    expect(json.ok).toBe(false);
    expect(json.fixtures[0]!.drift[0]).toMatchObject({ kind: "request", path: "A0", step: 1 });
  });

  it("when replay-run runs the demo model with prompts lacking a profile, then the report shows the first divergence in 80 columns", async () => {
    const prompts = promptsCopy("no-developer", (dir) =>
      rmSync(path.join(dir, "profiles", "developer"), { recursive: true }),
    );
    const r = await cli(["replay-run", rootId.slice(0, 8), "--prompts", prompts, "--offline", "--data-dir", dataDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^tool calls  parallel → response +│ parallel → response$/m);
    expect(r.stdout).toMatch(/^delegates  \*researcher \(researcher\), +│ researcher \(researcher\)$/m);
    expect(r.stdout).toContain(
      "First difference: A0, the delegations: recorded researcher (researcher),\ndeveloper (developer); replay researcher (researcher)",
    );
    for (const line of r.stdout.split("\n")) expect(line.length).toBeLessThanOrEqual(80);
    const json = JSON.parse(
      (await cli(["replay-run", rootId, "--prompts", prompts, "--offline", "--json", "--data-dir", dataDir])).stdout,
    ) as {
      recorded: string;
      replay: string;
      same: boolean;
      firstDifference: { path: string; field: string };
      contexts: { path: string; replay: unknown }[];
    };
    expect(json.recorded).toBe(rootId);
    expect(json.replay).not.toBe(rootId);
    expect(json.same).toBe(false);
    expect(json.firstDifference).toMatchObject({ path: "A0", field: "delegations" });
    expect(json.contexts.find((c) => c.path === "A0/developer")!.replay).toBeNull();
  });

  it("when replay-run runs against a preset's real endpoint, then the model gets the recorded message and the report shows where it parts", async () => {
    const server = await startFakeOpenAIServer();
    try {
      server.reply({ text: "Launch it quietly.", usage: { inputTokens: 40, outputTokens: 5 } });
      const cwd = at("with-endpoint");
      mkdirSync(cwd);
      writeFileSync(
        path.join(cwd, "actorzero.config.json"),
        JSON.stringify({ presets: { Fast: { model: "fast-model", baseURL: server.baseURL } } }),
      );
      const r = await cli(["replay-run", rootId.slice(0, 8), "--model", "Fast", "--json", "--data-dir", dataDir], {
        cwd,
        env: { ...cliEnv(), OPENAI_API_KEY: "sk-test-key-for-replay-run" },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(server.requests, r.stdout).toHaveLength(1);
      expect(server.requests[0]!.body.model).toBe("fast-model");
      expect(server.requests[0]!.body.messages.at(-1)).toEqual({
        role: "user",
        content: "Plan the launch of a small open-source note-taking app",
      });
      const report = JSON.parse(r.stdout) as {
        firstDifference: unknown;
        contexts: { path: string; replay: { answers: string[]; tokens: unknown } | null }[];
      };
      expect(report.firstDifference).toEqual({
        path: "A0",
        field: "toolCalls",
        recorded: "call 1: parallel",
        replay: "call 1: (none)",
      });
      expect(report.contexts[0]!.replay).toMatchObject({
        answers: ["Launch it quietly."],
        tokens: { input: 40, output: 5 },
      });
      expect(r.stdout + r.stderr).not.toContain("sk-test-key-for-replay-run");
    } finally {
      await server.close();
    }
  });

  it("when replay-run runs the same prompts against the recorded fixture, then the two runs are the same", async () => {
    const r = await cli([
      "replay-run",
      rootId.slice(0, 8),
      "--prompts",
      PROMPTS,
      "--fixture",
      at("fixtures", "demo.json"),
      "--json",
      "--data-dir",
      dataDir,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ same: true, firstDifference: null });
  });
});

describe("when the commands are given bad input", { timeout: 180_000 }, () => {
  it("then each refuses in one line, and replay-run writes nothing", async () => {
    const before = (await cli(["contexts", "--json", "--data-dir", dataDir])).stdout;
    expect(expectOneLineError(await cli(["export-fixture", "0000dead", "--data-dir", dataDir]))).toContain(
      "no context '0000dead'",
    );
    const usage = await cli(["replay-run", rootId, "--data-dir", dataDir]);
    expect(usage.code).toBe(2);
    expect(expectOneLineError(usage)).toContain("replay-run needs --model <preset> or --prompts <dir>");
    expect(
      expectOneLineError(await cli(["replay-run", rootId, "--model", "Nope", "--offline", "--data-dir", dataDir])),
    ).toContain("--model: no preset 'Nope'");
    expect(expectOneLineError(await cli(["check-fixtures", at("changed-prompts")]))).toContain("no fixtures in");
    expect((await cli(["contexts", "--json", "--data-dir", dataDir])).stdout).toBe(before);
  });
});
