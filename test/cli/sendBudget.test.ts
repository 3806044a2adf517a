// `actorzero send --budget`, as processes: the message's budget is parsed as run's is (a bad one is one line naming
// the key, and nothing is written), and a good one is added to what the tree has spent and holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, logLength } from "./support.ts";

let dataDir: string;
let rootId: string;
beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  const run = await cli(["run", "--offline", "--json", "--data-dir", dataDir]);
  expect(run.code, run.stderr).toBe(0);
  ({ contextId: rootId } = JSON.parse(run.stdout) as { contextId: string });
}, 180_000);
afterAll(async () => removeDir(dataDir));

describe("actorzero send --budget", { timeout: 240_000 }, () => {
  it("when --budget is malformed, then send refuses it in one line naming the key, and writes nothing", async () => {
    const before = await logLength(dataDir);
    const cases: [string, string][] = [
      [
        "totalTokenz=5",
        "actorzero: --budget: unknown key 'totalTokenz' (keys: inputTokens, outputTokens, totalTokens, costUsd, modelCalls, toolCalls, wallClockMs)",
      ],
      ["costUsd=-1", "actorzero: --budget: costUsd takes US dollars, a number 0 or more such as 0.5 (got '-1')"],
    ];
    for (const [value, line] of cases) {
      const r = await cli([
        "send",
        rootId.slice(0, 8),
        "once more",
        "--offline",
        "--budget",
        value,
        "--data-dir",
        dataDir,
      ]);
      expect([r.code, r.stderr.trim().split("\n")]).toEqual([2, [`${line} (see: actorzero send --help)`]]);
    }
    expect(await logLength(dataDir)).toBe(before);
  });

  it("when a message carries --budget, then the tree's budget is what it held then plus the message's, and the run spends from it", async () => {
    const sent = await cli([
      "send",
      rootId.slice(0, 8),
      "once more",
      "--offline",
      "--budget",
      "totalTokens=1000000,modelCalls=50",
      "--json",
      "--data-dir",
      dataDir,
    ]);
    expect(sent.code, sent.stderr).toBe(0);
    const audited = JSON.parse((await cli(["audit", rootId.slice(0, 8), "--json", "--data-dir", dataDir])).stdout);
    // The tree had no budget, so nothing was spent against one when the message arrived.
    expect(audited.budget).toMatchObject({
      rootContextId: rootId,
      limits: { totalTokens: 1_000_000, modelCalls: 50 },
      reserved: { modelCalls: 0 },
    });
    expect(audited.budget.spent.modelCalls).toBeGreaterThan(0);
  });
});
