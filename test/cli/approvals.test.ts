// `actorzero approvals`: the pending approvals of a real PGlite log, as a table and as JSON, whole log or one tree.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalId, ContextId, RunId } from "../../src/events/ids.ts";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { DomainEvent } from "../../src/events/schema.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { cli, expectOneLineError } from "./support.ts";

const ROOT = "11111111-0000-4000-8000-000000000001" as ContextId;
const CHILD = "22222222-0000-4000-8000-000000000002" as ContextId;
const OTHER = "33333333-0000-4000-8000-000000000003" as ContextId;
const A = "aaaaaaaa-0000-4000-8000-00000000000a" as ApprovalId;
const B = "bbbbbbbb-0000-4000-8000-00000000000b" as ApprovalId;
const C = "cccccccc-0000-4000-8000-00000000000c" as ApprovalId;
const run = "run-1" as RunId;

const created = (contextId: ContextId, parent: ContextId | null, root: ContextId): DomainEvent => ({
  type: "ContextCreated",
  data: {
    contextId,
    name: "n",
    label: "n",
    profile: "default",
    project: null,
    agentNumber: parent ? 1 : 0,
    depth: parent ? 1 : 0,
    kind: parent ? "subordinate" : "root",
    parentContextId: parent,
    parentAgentNumber: parent ? 0 : null,
    rootContextId: root,
    slot: null,
    modelOverride: null,
  },
});
const requested = (approvalId: ApprovalId, contextId: ContextId, toolCallId: string, env: string): DomainEvent => ({
  type: "ApprovalRequested",
  data: {
    approvalId,
    runId: run,
    step: 1,
    toolCallId,
    tool: "deploy",
    arguments: { env },
    contextId,
    agentNumber: 1,
    expiresAt: null,
  },
});

let dataDir: string;
beforeAll(async () => {
  dataDir = await copyPgliteTemplate();
  const store = await openPgliteStore({ dataDir });
  try {
    await store.append(ROOT, [created(ROOT, null, ROOT)], { expectedVersion: "any" });
    await store.append(
      CHILD,
      [created(CHILD, ROOT, ROOT), requested(A, CHILD, "call-1", "prod"), requested(B, CHILD, "call-2", "staging")],
      { expectedVersion: "any" },
    );
    await store.append(
      CHILD,
      [
        {
          type: "ApprovalDenied",
          data: { approvalId: B, runId: run, toolCallId: "call-2", by: "alice", reason: "not today" },
        },
      ],
      { expectedVersion: "any" },
    );
    await store.append(OTHER, [created(OTHER, null, OTHER), requested(C, OTHER, "call-9", "dev")], {
      expectedVersion: "any",
    });
  } finally {
    await store.close();
  }
});
afterAll(async () => removeDir(dataDir));

describe("given a log with approvals in two trees, one of them decided", () => {
  it("when approvals is run, then it lists the pending ones of every tree, oldest first, and says how to decide", async () => {
    const r = await cli(["approvals", "--data-dir", dataDir]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines.filter((l) => l.includes("awaiting approval")).map((l) => l.slice(0, 36))).toEqual([A, C]);
    expect(r.stdout).toContain('{"env":"prod"}');
    expect(r.stdout).not.toContain(B);
    expect(r.stdout).toContain("actorzero approve <approval>");
  });

  it("when it names a context, then it lists only that context's tree; --all adds the decided ones", async () => {
    const r = await cli(["approvals", ROOT.slice(0, 8), "--all", "--json", "--data-dir", dataDir]);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as {
      approvalId: string;
      status: string;
      by: string | null;
      reason: string | null;
      contextId: string;
    }[];
    expect(rows.map((a) => [a.approvalId, a.status, a.by, a.reason])).toEqual([
      [A, "pending", null, null],
      [B, "denied", "alice", "not today"],
    ]);
  });

  it("when it names no context that exists, then it fails with one line and exit 1", async () => {
    const r = await cli(["approvals", "deadbeef", "--data-dir", dataDir]);
    expect(r.code).toBe(1);
    expect(expectOneLineError(r)).toMatch(/no context 'deadbeef'/);
  });
});
