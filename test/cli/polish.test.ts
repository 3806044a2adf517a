// What the figures cover, the words, and the flags: a run and a send on one data dir, read back as a user would.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditReport, ContextAudit } from "../../src/projections/auditReport.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError, jsonLines, type CliResult } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string; recordedAt: string };

let dataDir: string;
let run: CliResult;
let send: CliResult;
let rootId: string;
let headBeforeSend: number;
let events: EventJson[];
let audit: AuditReport;

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  run = await cli(["run", "--data-dir", dataDir, "Plan a picnic for twelve people"]);
  rootId = /^A0 default ([0-9a-f-]{36})/m.exec(run.stdout)![1]!;
  headBeforeSend = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout).at(
    -1,
  )!.position;
  send = await cli(["send", rootId.slice(0, 8), "Now the budget, please", "--data-dir", dataDir]);
  events = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
  audit = JSON.parse((await cli(["audit", rootId, "--json", "--data-dir", dataDir])).stdout) as AuditReport;
});
afterAll(async () => {
  await removeDir(dataDir);
});

const plural = (n: number, word: string) => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
const contextsIn = (c: ContextAudit): ContextAudit[] => [c, ...c.children.flatMap(contextsIn)];

describe("when a send continues a tree that already ran", () => {
  it("shows this run's model calls and contexts, and labels the tree's whole life as totals", () => {
    expect(run.code, run.stderr).toBe(0);
    expect(send.code, send.stderr).toBe(0);
    const after = (e: EventJson) => e.position > headBeforeSend;
    const calls = events.filter((e) => after(e) && e.type === "ModelReplied").length;
    const contexts = new Set(events.filter((e) => after(e) && e.type === "RunStarted").map((e) => e.streamId)).size;
    expect(send.stdout).toMatch(
      new RegExp(
        `^completed in \\S+ · this run: ${plural(contexts, "context")} · ${plural(calls, "model call")} · tokens `,
        "m",
      ),
    );
    const t = audit.context.tree;
    expect(t.modelCalls).toBeGreaterThan(calls);
    expect(send.stdout).toMatch(
      new RegExp(
        `^tree totals, every run so far: ${plural(t.runs, "run")} · ${plural(t.contexts, "context")} · ${plural(t.modelCalls, "model call")} · `,
        "m",
      ),
    );
    // A first run is the tree's whole life: no totals line beside it.
    expect(run.stdout).toMatch(
      new RegExp(
        `this run: ${plural(contextsIn(audit.context).filter((c) => c.runs.some((r) => r.positions.first <= headBeforeSend)).length, "context")}`,
      ),
    );
    expect(run.stdout).not.toContain("tree totals");
  });

  it("audit gives the wall time from the first to the last event, and the busy time apart", async () => {
    const text = (await cli(["audit", rootId, "--data-dir", dataDir])).stdout;
    const tree = events.filter(
      (e) => contextsIn(audit.context).some((c) => c.id === e.streamId) && e.type !== "ContextCreated",
    );
    const runs = contextsIn(audit.context).flatMap((c) => c.runs);
    const first = Math.min(...runs.map((r) => Date.parse(r.startedAt)));
    const last = Math.max(...tree.map((e) => Date.parse(e.recordedAt)));
    const busy = runs.reduce((s, r) => s + (r.durationMs ?? 0), 0);
    const secs = (ms: number) => (ms / 1000).toFixed(ms < 10_000 ? 2 : 1);
    expect(text).toContain(`elapsed ${secs(last - first)}s (first to last event) · busy ${secs(busy)}s (runs summed)`);
    expect(text).not.toContain("run time");
  });
});

describe("words", () => {
  it("says 1 context, not 1 contexts", async () => {
    const one = await cli(["contexts", "--status", "completed", "--data-dir", dataDir]);
    const rows = one.stdout.split("\n").filter((l) => / completed /.test(l)).length;
    expect(one.stdout).toContain(`${plural(rows, "context")};`);
    const lone = await cli([
      "audit",
      audit.context.children.find((c) => c.children.length === 0)!.id,
      "--data-dir",
      dataDir,
    ]);
    expect(lone.stdout).toMatch(/^1 context · 1 run · 1 model call · /m);
  });
});

describe("flags", () => {
  it("--after -5 says a position is a non-negative integer, exit 2", async () => {
    const r = await cli(["events", "--after", "-5", "--data-dir", dataDir]);
    expect(r.code).toBe(2);
    expect(expectOneLineError(r)).toContain("--after takes a log position: a non-negative integer");
  });

  it("offers --store memory only to run and serve, and every other command refuses it with exit 2 and the reason", async () => {
    const helps = await Promise.all(
      ["run", "serve", "contexts", "tree", "audit", "events", "replay", "send", "stop"].map((c) => cli([c, "--help"])),
    );
    for (const h of helps.slice(0, 2)) expect(h.stdout).toMatch(/--store <store> .*memory/);
    for (const h of helps.slice(2)) {
      expect(h.code).toBe(0);
      expect(h.stdout).toMatch(/--store <store>/);
      expect(h.stdout).not.toMatch(/memory/);
    }
    for (const args of [
      ["contexts"],
      ["tree"],
      ["audit", "1234"],
      ["events"],
      ["replay"],
      ["send", "1234", "hi"],
      ["stop", "1234"],
    ]) {
      const r = await cli([...args, "--store", "memory"]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(expectOneLineError(r)).toContain(
        "--store memory works only with run and serve: a log in memory is gone when its command ends",
      );
    }
  });

  it("stop --help, docs/cli.md and stop --json name the same fields", async () => {
    const help = (await cli(["stop", "--help"])).stdout;
    const doc = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8");
    const out = await cli(["stop", rootId, "--json", "--data-dir", dataDir]);
    expect(out.code, out.stderr).toBe(0);
    const keys = Object.keys(JSON.parse(out.stdout) as object);
    const shape = `{ ${keys.join(", ")} }`;
    expect(help).toContain(`--json: ${shape}.`);
    expect(doc).toContain(`\`stop --json\` — \`${shape}\`.`);
  });
});

describe("what a root was asked", () => {
  it("contexts and tree show the root's first message, and contexts --grep filters the trees by it", async () => {
    // One after the other: a PGlite data dir belongs to one process at a time.
    const all = await cli(["contexts", "--data-dir", dataDir]);
    const hit = await cli(["contexts", "--grep", "PICNIC", "--json", "--data-dir", dataDir]);
    const miss = await cli(["contexts", "--grep", "no such task", "--data-dir", dataDir]);
    const tree = await cli(["tree", "--data-dir", dataDir]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(new RegExp(`^${rootId.slice(0, 8)} .* Plan a picnic for twelve people$`, "m"));
    const rows = JSON.parse(hit.stdout) as { rootContextId: string; task: string | null; kind: string }[];
    expect(rows.length).toBe(contextsIn(audit.context).length);
    expect(rows.every((r) => r.rootContextId === rootId)).toBe(true);
    expect(rows.find((r) => r.kind === "root")!.task).toBe("Plan a picnic for twelve people");
    expect(miss.code).toBe(0);
    expect(miss.stdout).toContain('no contexts under a root whose task contains "no such task"');
    expect(tree.stdout).toContain(`A0 default ${rootId.slice(0, 8)} · task: "Plan a picnic for twelve people"`);
  });
});
