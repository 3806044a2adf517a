// The offline demo through the CLI process: the tree it builds, its events, its audit, and replay against tampering.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { buildAudit, type AuditReport, type ContextAudit } from "../../src/projections/auditReport.ts";
import { auditText } from "../../src/cli/auditText.ts";
import { paintFor } from "../../src/cli/ansi.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";
import type { TreeJson } from "../../src/cli/commands/tree.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError, jsonLines, linePositions, type CliResult } from "./support.ts";

type EventJson = { position: number; streamId: string; type: string; data: Record<string, any> };

let dataDir: string;
let run: CliResult;
let events: EventJson[];

beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  run = await cli(["run", "--events", "--data-dir", dataDir, "Plan a picnic for twelve people"]);
  events = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
});
afterAll(async () => {
  await removeDir(dataDir);
});

describe("when the demo runs without an API key", () => {
  it("says it uses the offline demo model and ends with the composed answer", () => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("offline demo model (OPENAI_API_KEY is not set)");
    expect(run.stdout).toContain("Answer for “Plan a picnic for twelve people”");
    expect(run.stdout).toMatch(/Look further\n\s+npx actorzero audit [0-9a-f]{8} --data-dir /);
  });

  it("builds the tree A0 → (A1 researcher → A2 researcher, A1 developer), all completed", async () => {
    const r = await cli(["tree", "--json", "--data-dir", dataDir]);
    expect(r.code, r.stderr).toBe(0);
    const [root, ...others] = JSON.parse(r.stdout) as TreeJson[];
    expect(others).toEqual([]);
    const shape = (t: TreeJson): unknown => ({
      n: t.agentNumber,
      profile: t.profile,
      status: t.shownStatus,
      children: t.children.map(shape),
    });
    expect(shape(root!)).toEqual({
      n: 0,
      profile: "default",
      status: "completed",
      children: [
        {
          n: 1,
          profile: "researcher",
          status: "completed",
          children: [{ n: 2, profile: "researcher", status: "completed", children: [] }],
        },
        { n: 1, profile: "developer", status: "completed", children: [] },
      ],
    });
    const parents = (t: TreeJson): void => {
      for (const c of t.children) {
        expect(c.parentContextId).toBe(t.id);
        expect(c.parentAgentNumber).toBe(t.agentNumber);
        expect(c.depth).toBe(t.depth + 1);
        parents(c);
      }
    };
    parents(root!);
    // The delegation went through the real tools: parallel jobs for the A1s, call_subordinate for the A2.
    const calls = events.filter((e) => e.type === "ToolCalled").map((e) => e.data["name"]);
    expect(calls).toEqual(expect.arrayContaining(["parallel", "call_subordinate", "response"]));
    expect(events.filter((e) => e.type === "ParallelJobFinished").map((e) => e.data["status"])).toEqual([
      "success",
      "success",
    ]);
  });

  it("printed every event as it was appended, in log order (run --events)", () => {
    expect(events.length).toBeGreaterThan(30);
    expect(linePositions(run.stdout)).toEqual(events.map((e) => e.position));
  });
});

describe("audit --json", () => {
  it("parses and matches the log: contexts, runs, model and tool calls, tokens, positions", async () => {
    const rootId = events.find((e) => e.type === "ContextCreated" && e.data["parentContextId"] === null)!.streamId;
    const r = await cli(["audit", rootId.slice(0, 8), "--json", "--data-dir", dataDir]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as AuditReport;
    expect(report.format).toBe(1);
    expect(report.context.id).toBe(rootId);
    expect(report.position).toBe(events.at(-1)!.position);

    const all: ContextAudit[] = [];
    const walk = (c: ContextAudit) => {
      all.push(c);
      c.children.forEach(walk);
    };
    walk(report.context);
    expect(all.map((c) => c.id).sort()).toEqual([...new Set(events.map((e) => e.streamId))].sort());

    const replies = events.filter((e) => e.type === "ModelReplied");
    const t = report.context.tree;
    expect(t.contexts).toBe(4);
    expect(t.runs).toBe(events.filter((e) => e.type === "RunStarted").length);
    expect(t.modelCalls).toBe(replies.length);
    expect(t.toolCalls).toBe(events.filter((e) => e.type === "ToolCalled").length);
    expect(t.inputTokens).toBe(replies.reduce((n, e) => n + e.data["usage"].inputTokens, 0));
    expect(t.outputTokens).toBe(replies.reduce((n, e) => n + e.data["usage"].outputTokens, 0));
    expect(t.events).toBe(events.length);

    const byPosition = new Map(events.map((e) => [e.position, e]));
    const kindOf: Record<string, string> = {
      message: "MessageReceived",
      model_call: "ModelCalled",
      tool_call: "ToolCalled",
    };
    for (const c of all) {
      expect(c.runs).toHaveLength(1);
      expect(c.runs[0]!.status).toBe("completed");
      for (const entry of c.runs[0]!.entries) {
        const e = byPosition.get(entry.position)!;
        expect(e.streamId).toBe(c.id);
        expect(e.type).toBe(kindOf[entry.kind]);
      }
      const created = events.find((e) => e.type === "ContextCreated" && e.streamId === c.id)!;
      expect(c.parentContextId).toBe(created.data["parentContextId"]);
      expect(c.runs[0]!.response).toBe(
        events.find((e) => e.type === "RunCompleted" && e.streamId === c.id)!.data["response"],
      );
    }
    const parallel = report.context.runs[0]!.entries.find((e) => e.kind === "tool_call" && e.name === "parallel");
    expect(parallel && parallel.kind === "tool_call" && parallel.jobs.map((j) => j.subordinate?.agentNumber)).toEqual([
      1, 1,
    ]);
  });

  it("as text, names every agent and cuts long texts unless --full (the same report, rendered in process)", async () => {
    const rootId = events[0]!.streamId;
    const report = JSON.parse((await cli(["audit", rootId, "--json", "--data-dir", dataDir])).stdout) as AuditReport;
    const recorded = events.map((e) => ({ ...e, globalPosition: e.position })) as unknown as RecordedEvent[];
    const streams = new Map<string, RecordedEvent[]>();
    for (const e of recorded) streams.set(e.streamId, [...(streams.get(e.streamId) ?? []), e]);
    // The tree's budget is read beside the fold (auditLoad.ts); the demo's tree has none.
    const { budget, ...folded } = report;
    expect(budget).toBeNull();
    expect(buildAudit(rootId, streams)).toEqual(folded);
    const short = auditText(report, { max: 160, paint: paintFor({ isTTY: false }) });
    expect(short).toContain("A2 researcher “fact-checker”");
    expect(short).toMatch(/… \(\+\d+ chars\)/);
    expect(auditText(report, { max: Number.POSITIVE_INFINITY, paint: paintFor({ isTTY: false }) })).not.toMatch(
      /… \(\+\d+ chars\)/,
    );
  });
});

describe("replay", () => {
  it("--verify passes on an untouched log, fails naming a tampered projection row, and replay repairs it", async () => {
    const ok = await cli(["replay", "--verify", "--data-dir", dataDir]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^ok: /);

    const victim = events.find((e) => e.type === "ContextCreated" && e.data["agentNumber"] === 2)!.streamId;
    const store = await openPgliteStore({ dataDir });
    await store.sql.query(
      `UPDATE projection_state SET state = jsonb_set(state, '{status}', '"failed"') WHERE projection = 'contexts' AND key = $1`,
      [victim],
    );
    await store.close();

    const bad = await cli(["replay", "--verify", "--data-dir", dataDir]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`contexts ${victim}: state.status: stored "failed", rebuilt "idle"`);

    const repaired = await cli(["replay", "--json", "--data-dir", dataDir]);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(JSON.parse(repaired.stdout)).toMatchObject({
      verified: false,
      ok: false,
      differences: [{ projection: "contexts", key: victim }],
    });
    expect((await cli(["replay", "--verify", "--data-dir", dataDir])).code).toBe(0);
  });
});

describe("when the command line or the id is wrong", () => {
  it("refuses with one clear line and a non-zero exit, never a stack trace", async () => {
    const unknownId = await cli(["audit", "ffffffff", "--data-dir", dataDir]);
    expect(unknownId.code).toBe(1);
    expect(expectOneLineError(unknownId)).toContain("no context 'ffffffff'");

    // These are refused before the log is opened, so they can run side by side.
    const file = path.join(dataDir, "..", `not-a-dir-${process.pid}`);
    writeFileSync(file, "x");
    const [notAnId, badFlag, badType, notDir, empty] = await Promise.all([
      cli(["stop", "not-an-id!", "--data-dir", dataDir]),
      cli(["contexts", "--colour", "--data-dir", dataDir]),
      cli(["events", "--type", "RunWobbled", "--data-dir", dataDir]),
      cli(["contexts", "--data-dir", file]),
      cli(["tree", "--data-dir", path.join(dataDir, "..", `nothing-here-${process.pid}`)]),
    ]);
    expect(notAnId.code).toBe(2);
    expect(expectOneLineError(notAnId)).toContain("is not a context id");
    expect(badFlag.code).toBe(2);
    expect(expectOneLineError(badFlag)).toBe("actorzero: unknown option --colour (see: actorzero contexts --help)");
    expect(badType.code).toBe(2);
    expect(expectOneLineError(badType)).toContain("--type takes event types");
    expect(notDir.code).toBe(1);
    expect(expectOneLineError(notDir)).toContain("it is not a directory");
    expect(empty.code).toBe(1);
    expect(expectOneLineError(empty)).toContain("no event log in");
  });
});
