// Budgets from the command line, as processes: `run --budget` parks a tree out of budget, `contexts` and `tree` say
// so and name the command that extends it, `extend-budget` (through the process running the tree) lets it finish,
// and `audit` shows what the tree spent. A bad budget is one line naming the key, and nothing is written.
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, startCli, logLength } from "./support.ts";

let dataDir: string;
beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
});
afterAll(async () => removeDir(dataDir));

describe("actorzero run --budget and extend-budget", { timeout: 240_000 }, () => {
  it("when --budget is malformed, then run refuses it in one line naming the key, and opens no log", async () => {
    const fresh = path.join(dataDir, "..", `${path.basename(dataDir)}-never`);
    const cases: [string, string][] = [
      [
        "totalTokenz=5",
        "actorzero: --budget: unknown key 'totalTokenz' (keys: inputTokens, outputTokens, totalTokens, costUsd, modelCalls, toolCalls, wallClockMs)",
      ],
      ["totalTokens=2e4", "actorzero: --budget: totalTokens takes a whole number, 0 or more (got '2e4')"],
      ["costUsd=-1", "actorzero: --budget: costUsd takes US dollars, a number 0 or more such as 0.5 (got '-1')"],
      ["modelCalls=3,modelCalls=4", "actorzero: --budget: modelCalls is given twice"],
      [
        "totalTokens",
        "actorzero: --budget: 'totalTokens' is not key=value (key=value pairs separated by commas, e.g. totalTokens=20000,costUsd=0.5)",
      ],
    ];
    for (const [value, line] of cases) {
      const r = await cli(["run", "a task", "--offline", "--budget", value, "--data-dir", fresh]);
      expect([r.code, r.stderr.trim().split("\n")]).toEqual([2, [`${line} (see: actorzero run --help)`]]);
    }
    expect(existsSync(fresh)).toBe(false);
  });

  it("when the tree runs out of budget, then it parks, the views name the command, and extend-budget lets it finish", async () => {
    const run = startCli([
      "run",
      "--offline",
      "--latency",
      "10",
      "--budget",
      "totalTokens=6000",
      "--events",
      "--json",
      "--data-dir",
      dataDir,
    ]);
    const exhausted = JSON.parse(await run.waitForLine(/"type":"BudgetExhausted"/));
    const root: string = exhausted.data.rootContextId;
    const short = root.slice(0, 8);

    const contexts = await cli(["contexts", "--data-dir", dataDir]);
    expect(contexts.code).toBe(0);
    expect(contexts.stdout).toMatch(/running \(parked: totalTokens budget\)/);
    expect(contexts.stdout).toContain(
      `let it go on with actorzero extend-budget ${short} totalTokens=20000 (any amount)`,
    );
    const tree = await cli(["tree", root, "--data-dir", dataDir]);
    expect(tree.stdout).toMatch(/^budget: totalTokens [\d,]+ of 6,000/m);
    const parkedRows = JSON.parse((await cli(["contexts", "--json", "--data-dir", dataDir])).stdout) as {
      parkedOnBudget: { limit: string } | null;
    }[];
    expect(parkedRows.filter((r) => r.parkedOnBudget?.limit === "totalTokens").length).toBeGreaterThan(0);

    // A bad extension is refused before anything is asked of the holder.
    const bad = await cli(["extend-budget", short, "totalTokens=20000,outputTokenz=1", "--data-dir", dataDir]);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      expect.stringMatching(
        /^actorzero: <more>: unknown key 'outputTokenz' \(keys: .*\) \(see: actorzero extend-budget --help\)$/,
      ),
    ]);

    const extended = await cli(["extend-budget", short, "totalTokens=20_000", "--json", "--data-dir", dataDir]);
    expect(extended.code).toBe(0);
    expect(JSON.parse(extended.stdout)).toMatchObject({ rootContextId: root, limits: { totalTokens: 26_000 } });
    const ended = await run.done;
    expect(ended.code).toBe(0);
    const last = ended.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((e) => e.streamId === root)
      .at(-1);
    expect(last).toMatchObject({ type: "RunCompleted" });

    const audit = await cli(["audit", short, "--data-dir", dataDir]);
    const line = /^budget: totalTokens ([\d,]+) of 26,000$/m.exec(audit.stdout);
    expect(line).not.toBeNull();
    const store = await openPgliteStore({ dataDir });
    try {
      // Spent is the usage of the tree's replies, each counted once, and nothing stays reserved.
      const all = await store.readAll();
      const usage = all.flatMap((e) =>
        e.type === "ModelReplied" && e.data.usage ? [e.data.usage.inputTokens + e.data.usage.outputTokens] : [],
      );
      expect(Number(line![1]!.replaceAll(",", ""))).toBe(usage.reduce((a, b) => a + b, 0));
      // The log has one writer: it holds what each call spent (each settle once), never a reservation.
      expect(all.filter((e) => e.type === "BudgetReserved")).toEqual([]);
      const settled = all.flatMap((e) =>
        e.type === "BudgetSettled"
          ? [e.data.reservationId]
          : e.type === "ModelReplied" && e.data.settles
            ? [e.data.settles.reservationId]
            : [],
      );
      expect(settled.length).toBeGreaterThan(0);
      expect(new Set(settled).size).toBe(settled.length);
    } finally {
      await store.close();
    }
    const audited = JSON.parse((await cli(["audit", short, "--json", "--data-dir", dataDir])).stdout);
    expect(audited.budget).toMatchObject({
      rootContextId: root,
      limits: { totalTokens: 26_000 },
      reserved: { modelCalls: 0 },
    });
    expect(await logLength(dataDir)).toBeGreaterThan(0);
  });

  it("when the process running the tree is gone, then extend-budget takes the tree over and drives it to its end", async () => {
    const dir = await copyPgliteTemplate();
    try {
      const run = startCli([
        "run",
        "--offline",
        "--latency",
        "10",
        "--budget",
        "totalTokens=6000",
        "--events",
        "--json",
        "--data-dir",
        dir,
      ]);
      const root: string = JSON.parse(await run.waitForLine(/"type":"BudgetExhausted"/)).data.rootContextId;
      run.child.kill("SIGKILL");
      expect((await run.done).signal).toBe("SIGKILL");

      const extended = await cli(["extend-budget", root.slice(0, 8), "totalTokens=20000", "--data-dir", dir]);
      expect([extended.code, extended.stderr]).toEqual([0, ""]);
      expect(extended.stdout).toContain(`budget of tree ${root.slice(0, 8)} extended by totalTokens=20000`);
      expect(extended.stdout).toContain("no run of the tree is parked on its budget now");
      const tree = JSON.parse((await cli(["tree", root, "--json", "--data-dir", dir])).stdout)[0];
      expect(tree).toMatchObject({
        shownStatus: "completed",
        budget: { limits: { totalTokens: 26_000 }, reserved: { modelCalls: 0 } },
      });
      const statuses = (t: { shownStatus: string; children: unknown[] }): string[] => [
        t.shownStatus,
        ...t.children.flatMap((c) => statuses(c as typeof t)),
      ];
      expect(new Set(statuses(tree))).toEqual(new Set(["completed"]));
    } finally {
      await removeDir(dir);
    }
  });
});
