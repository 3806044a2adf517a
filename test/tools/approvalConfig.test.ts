// Which tool calls need approval: the tool's own `needsApproval`, the runtime's, profiles' and projects' lists,
// and the refusals of bad settings at start (nothing written).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { loadConfig } from "../../src/cli/config.ts";
import type { ContextId, RunId } from "../../src/events/ids.ts";
import { createRuntime, defineTool, RuntimeError, scriptedModel, type EventStore } from "../../src/index.ts";
import { loadProfiles } from "../../src/profiles/profiles.ts";
import { approvalListFor } from "../../src/runtime/approvalPolicy.ts";
import { callNeedsApproval, listNames } from "../../src/tools/approval.ts";
import { freshPgliteStore } from "../support/pglite.ts";

const ctx = {
  contextId: "ctx-1" as ContextId,
  runId: "run-1" as RunId,
  agentNumber: 1,
  profile: "ops",
  toolCallId: "call-1",
};
const deploy = defineTool({
  name: "deploy",
  description: "Deploys a service.",
  input: z.object({ env: z.string() }),
  needsApproval: ({ env }) => env === "prod",
  run: ({ env }) => `deployed to ${env}`,
});

describe("given a tool that declares needsApproval", () => {
  it("when it is true or false, then every call needs approval or none does", async () => {
    expect(await callNeedsApproval({ name: "t", needsApproval: true }, {}, ctx, [])).toBe(true);
    expect(await callNeedsApproval({ name: "t", needsApproval: false }, {}, ctx, [])).toBe(false);
    expect(await callNeedsApproval({ name: "t" }, {}, ctx, [])).toBe(false);
  });

  it("when it is a function of the input, then it decides call by call, synchronously or not", async () => {
    expect(await callNeedsApproval(deploy as never, { env: "prod" }, ctx, [])).toBe(true);
    expect(await callNeedsApproval(deploy as never, { env: "staging" }, ctx, [])).toBe(false);
    const seen: unknown[] = [];
    const later = {
      name: "t",
      needsApproval: async (input: unknown, c: typeof ctx) => (seen.push(c.toolCallId), (input as { n: number }).n > 2),
    };
    expect(await callNeedsApproval(later as never, { n: 3 }, ctx, [])).toBe(true);
    expect(await callNeedsApproval(later as never, { n: 1 }, ctx, [])).toBe(false);
    expect(seen).toEqual(["call-1", "call-1"]);
  });

  it("when the function throws or answers something other than a boolean, then the call needs approval", async () => {
    const throwing = {
      name: "t",
      needsApproval: () => {
        throw new Error("policy service down");
      },
    };
    const vague = { name: "t", needsApproval: () => "maybe" as unknown as boolean };
    expect(await callNeedsApproval(throwing as never, {}, ctx, [])).toBe(true);
    expect(await callNeedsApproval(vague as never, {}, ctx, [])).toBe(true);
  });

  it("when a configured list names the tool, then it needs approval whatever the tool says", async () => {
    expect(await callNeedsApproval(deploy as never, { env: "staging" }, ctx, ["deploy"])).toBe(true);
    expect(await callNeedsApproval({ name: "github__create_issue" }, {}, ctx, ["github__*"])).toBe(true);
    expect(await callNeedsApproval({ name: "gitlab__create_issue" }, {}, ctx, ["github__*"])).toBe(false);
    expect(listNames(["call_subordinate"], "call_subordinate")).toBe(true);
    expect(listNames(["call_sub"], "call_subordinate")).toBe(false);
  });
});

describe("given approval lists in the runtime options, a profile and a project", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "actorzero-approvals-"));
    mkdirSync(join(dir, "ops"));
    writeFileSync(
      join(dir, "ops", "profile.json"),
      JSON.stringify({ title: "Ops", needsApproval: ["deploy", "k8s__*"] }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("when a context's list is asked for, then it holds the runtime's, its profile's and its project's entries", () => {
    const profiles = loadProfiles([dir]);
    const options = {
      approvals: { tools: ["send_email"] },
      projects: { live: { needsApproval: ["call_subordinate"] } },
    };
    const settings = { tools: options.approvals.tools, timeoutMs: null };
    expect(approvalListFor(settings, profiles, options.projects, "ops", "live")).toEqual([
      "send_email",
      "deploy",
      "k8s__*",
      "call_subordinate",
    ]);
    expect(approvalListFor(settings, profiles, options.projects, "default", null)).toEqual(["send_email"]);
  });

  it("when a profile's list is not a list of names, then loading profiles fails naming the field", () => {
    writeFileSync(join(dir, "ops", "profile.json"), JSON.stringify({ title: "Ops", needsApproval: "deploy" }));
    expect(() => loadProfiles([dir])).toThrow(/needsApproval/);
  });

  it("when actorzero.config.json sets approvals, then the CLI reads them and names the field of a bad one", () => {
    writeFileSync(
      join(dir, "actorzero.config.json"),
      JSON.stringify({
        approvals: { tools: ["deploy"], timeoutMs: 60000 },
        projects: { p: { needsApproval: ["x*"] } },
      }),
    );
    expect(loadConfig(dir).approvals).toEqual({ tools: ["deploy"], timeoutMs: 60000 });
    writeFileSync(join(dir, "actorzero.config.json"), JSON.stringify({ approvals: { timeoutMs: -1 } }));
    expect(() => loadConfig(dir)).toThrow(/approvals\.timeoutMs/);
    writeFileSync(join(dir, "actorzero.config.json"), JSON.stringify({ projects: { p: { needsApproval: ["a*b"] } } }));
    expect(() => loadConfig(dir)).toThrow(/projects\.p\.needsApproval\.0/);
  });
});

describe("given bad approval settings handed to createRuntime", () => {
  let store: EventStore;
  beforeAll(async () => {
    store = await freshPgliteStore();
  });
  afterAll(async () => store.close());

  const refusedAt = async (options: Record<string, unknown>, field: string) => {
    const model = scriptedModel(() => ({ text: "ok" }));
    const error = await createRuntime({ store, model, ...options }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error).toMatchObject({ reason: "invalid", field });
  };

  it("when a list, a timeout or a tool's flag is of the wrong kind, then it is refused naming the field and nothing is written", async () => {
    const head = await store.headPosition();
    await refusedAt({ approvals: { timeoutMs: 0 } }, "approvals.timeoutMs");
    await refusedAt({ approvals: { tools: ["ok", ""] } }, "approvals.tools.1");
    await refusedAt({ approvals: { tool: ["deploy"] } }, "approvals");
    await refusedAt({ projects: { live: { needsApproval: "deploy" } } }, "projects.live.needsApproval");
    await refusedAt({ tools: [{ ...deploy, needsApproval: "yes" }] }, "tools[0].needsApproval");
    await refusedAt({ tools: [{ ...deploy, idempotent: 1 }] }, "tools[0].idempotent");
    await refusedAt({ recovery: "restart" }, "recovery");
    expect(await store.headPosition()).toBe(head);
  });

  it("when a setting makes calls need approval, then the runtime opens (calls park) and nothing is written", async () => {
    const head = await store.headPosition();
    const opens = async (options: Record<string, unknown>) => {
      const rt = await createRuntime({ store, model: scriptedModel(() => ({ text: "ok" })), ...options });
      await rt.close();
    };
    await opens({ tools: [deploy] });
    await opens({ tools: [{ ...deploy, needsApproval: true }], approvals: { timeoutMs: 1000 } });
    await opens({ approvals: { tools: ["deploy"] } });
    await opens({ projects: { live: { needsApproval: ["github__*"] } } });
    const dir = mkdtempSync(join(tmpdir(), "actorzero-approvals-"));
    try {
      mkdirSync(join(dir, "ops"));
      writeFileSync(join(dir, "ops", "profile.json"), JSON.stringify({ title: "Ops", needsApproval: ["deploy"] }));
      await opens({ profiles: [dir] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await store.headPosition()).toBe(head);
  });

  it("when recovery is 'resume' or 'interrupt', then the runtime opens; anything else is refused naming what is expected", async () => {
    for (const recovery of ["resume", "interrupt"] as const)
      await (await createRuntime({ store, model: scriptedModel(() => ({ text: "ok" })), recovery })).close();
    const error = await createRuntime({
      store,
      model: scriptedModel(() => ({ text: "ok" })),
      recovery: "later" as never,
    }).catch((e: unknown) => e);
    expect(String((error as Error).message)).toMatch(/recovery: expected "resume" or "interrupt"/);
  });
});
