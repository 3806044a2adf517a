// The read routes behind the web page over real HTTP: the tree folded from the log (now, at a position, some ids)
// against the stored projections, and the audit route against the loader `audit --json` uses.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContextView } from "../../src/projections/contexts.ts";
import { loadAudit } from "../../src/projections/auditLoad.ts";
import type { UsageView } from "../../src/projections/usage.ts";
import type { TreeRow } from "../../src/server/treeFold.ts";
import { call, isFirstStep, userMessages } from "../delegation/support.ts";
import { api, served, type Served } from "../server/support.ts";
import { internalsOf } from "../../src/runtime/runtime.ts";

let s: Served;
const roots: string[] = [];

beforeAll(async () => {
  s = await served((req) => {
    const task = userMessages(req)[0] ?? "";
    if (req.agentNumber === 0 && isFirstStep(req) && task.startsWith("fan out")) {
      return call("parallel", {
        tool_calls: [
          { name: "call_subordinate", arguments: { message: "left" } },
          { name: "call_subordinate", arguments: { message: "right" } },
        ],
      });
    }
    if (req.agentNumber === 0 && isFirstStep(req)) return call("call_subordinate", { message: "one below" });
    return { text: `done: ${task}`, usage: { inputTokens: 7 + req.agentNumber, outputTokens: 3 } };
  });
  for (const task of ["fan out to two", "delegate once"]) {
    const id = (await api(s.url, "POST", "/v1/contexts", {})).body.id as string;
    expect((await api(s.url, "POST", `/v1/contexts/${id}/messages`, { text: task, wait: true })).body.status).toBe(
      "completed",
    );
    roots.push(id);
  }
});
afterAll(async () => s.close());

const tree = async (query = "") => {
  const r = await api(s.url, "GET", `/v1/tree${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { position: number; head: number; rows: TreeRow[] };
};

describe("given a served log of two delegation trees", () => {
  it("when the tree is asked for, then each context's row has the stored projections' status and tokens, and its first message as task", async () => {
    const { rows, position } = await tree();
    const stored = await s.rt.contexts();
    expect(rows.map((r) => r.id)).toEqual(stored.map((c) => c.id));
    expect(position).toBe(await s.store.headPosition());
    for (const r of rows) {
      const view = stored.find((c) => c.id === r.id)!;
      const own = (await s.rt.usage(r.id)).own!;
      const first = (await s.rt.events({ contextId: r.id })).find((e) => e.type === "MessageReceived");
      expect({
        status: r.status,
        parentId: r.parentId,
        agentNumber: r.agentNumber,
        inputTokens: r.inputTokens,
        outputTokens: r.outputTokens,
      }).toEqual({
        status: view.status,
        parentId: view.parentContextId,
        agentNumber: view.agentNumber,
        inputTokens: own.inputTokens,
        outputTokens: own.outputTokens,
      });
      expect(r.task).toBe(first?.type === "MessageReceived" ? first.data.text : null);
    }
    expect(
      rows
        .filter((r) => r.parentId === roots[0])
        .map((r) => r.task)
        .sort(),
    ).toEqual(["left", "right"]);
    // A root's row also carries its whole tree's tokens: the usage projection's rollup.
    for (const root of roots) {
      const rollup = (await s.rt.usage(root)).rollup!;
      expect(rows.find((r) => r.id === root)!.treeTokens).toEqual({
        inputTokens: rollup.inputTokens,
        outputTokens: rollup.outputTokens,
      });
      expect(rollup.inputTokens).toBeGreaterThan(rows.find((r) => r.id === root)!.inputTokens);
    }
    expect(rows.filter((r) => r.parentId !== null).every((r) => r.treeTokens === null)).toBe(true);
    // Both jobs of the fan-out name the one parallel call; the single delegation names none.
    const jobs = rows.filter((r) => r.parentId === roots[0]);
    expect(jobs[0]!.parallelCall).not.toBeNull();
    expect(jobs[1]!.parallelCall).toBe(jobs[0]!.parallelCall);
    expect(rows.find((r) => r.parentId === roots[1])!.parallelCall).toBeNull();
  });

  it("when the tree is asked for at a position, then it equals the projections rebuilt from zero up to that position", async () => {
    const secondCreated = (await s.rt.events({ contextId: roots[1]! }))[0]!.globalPosition;
    const at = secondCreated + 3;
    const past = await tree(`?at=${at}`);
    expect(past.position).toBe(at);
    const snap = await internalsOf(s.rt).projections.rebuildInto("web_at_", { until: at });
    const contexts = snap["contexts"]!.map((r) => r.state as ContextView).filter((c) => c.createdPosition > 0);
    const usage = new Map(snap["usage"]!.map((r) => [r.key, r.state as UsageView]));
    expect(past.rows.map((r) => r.id).sort()).toEqual(contexts.map((c) => c.id).sort());
    expect(past.rows.map((r) => r.id)).toContain(roots[1]);
    for (const r of past.rows) {
      const c = contexts.find((x) => x.id === r.id)!;
      expect([r.status, r.inputTokens]).toEqual([c.status, usage.get(r.id)?.inputTokens ?? 0]);
    }
    // The second root had only just started then: running, and its child not created yet.
    expect(past.rows.find((r) => r.id === roots[1])!.status).toBe("running");
    expect(past.rows.some((r) => r.parentId === roots[1])).toBe(false);
    // Back to before the second root, then forward again: the same answers as asked fresh.
    expect((await tree(`?at=${secondCreated - 1}`)).rows.map((r) => r.id)).not.toContain(roots[1]);
    expect(await tree(`?at=${at}`)).toEqual(past);
  });

  it("when some ids are asked for, then only their rows come back; bad ids or positions get 400 naming the field", async () => {
    expect((await tree(`?ids=${roots[1]},${roots[0]}`)).rows.map((r) => r.id)).toEqual([roots[0], roots[1]]);
    const bad = await api(s.url, "GET", "/v1/tree?ids=nope");
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^ids\.0: must be context ids/);
    expect((await api(s.url, "GET", "/v1/tree?at=-1")).status).toBe(400);
    expect((await api(s.url, "GET", "/v1/tree?deep=1")).body.error.message).toBe("query: unknown field 'deep'");
    const doc = (await api(s.url, "GET", "/v1/openapi.json")).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/v1/tree", "/v1/contexts/{id}/audit"]));
  });

  it("when a context's audit is asked for, then it is the report the CLI's loader builds; at cuts it; summary drops the children's runs", async () => {
    const full = await api(s.url, "GET", `/v1/contexts/${roots[0]}/audit`);
    expect(full.status).toBe(200);
    expect(full.body).toEqual(
      JSON.parse(JSON.stringify(await loadAudit(s.store, internalsOf(s.rt).projections, roots[0]!))),
    );
    expect(full.body.context.children).toHaveLength(2);

    const summary = (await api(s.url, "GET", `/v1/contexts/${roots[0]}/audit?children=summary`)).body;
    expect(summary.context.runs).toEqual(full.body.context.runs);
    expect(summary.context.children.map((c: any) => [c.id, c.runs, c.tree])).toEqual(
      full.body.context.children.map((c: any) => [c.id, [], c.tree]),
    );

    const started = full.body.context.runs[0].positions.first as number;
    const early = (await api(s.url, "GET", `/v1/contexts/${roots[0]}/audit?at=${started + 1}`)).body;
    expect(early.position).toBeLessThanOrEqual(started + 1);
    expect(early.context.runs[0].status).toBe("running");
    expect(early.context.children).toEqual([]);

    const before = await api(s.url, "GET", `/v1/contexts/${roots[1]}/audit?at=${started}`);
    expect(before.status).toBe(404);
    expect(before.body.error.message).toBe(`context ${roots[1]} did not exist yet at position ${started}`);
    expect((await api(s.url, "GET", "/v1/contexts/00000000-0000-4000-8000-000000000000/audit")).status).toBe(404);
  });
});
