import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshPgliteStore } from "../support/pglite.ts";
import * as api from "../../src/index.ts";
import * as kit from "../../src/testing/index.ts";
import { createRuntime, RuntimeError, scriptedModel, type EventStore, type Runtime } from "../../src/index.ts";

let store: EventStore;
let rt: Runtime;
beforeAll(async () => {
  store = await freshPgliteStore();
  rt = await createRuntime({ store, model: scriptedModel(() => ({ text: "ok" })), limits: { passivateAfterMs: 50 } });
});
afterAll(async () => {
  await rt.close();
  await store.close();
});

/** The refusal a call gets, asserting it is a RuntimeError naming `field`. */
const refusal = async (p: Promise<unknown> | (() => unknown), field: string): Promise<RuntimeError> => {
  let error: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(RuntimeError);
  const e = error as RuntimeError;
  expect(e.reason).toBe("invalid");
  expect(e.field).toBe(field);
  expect(e.expected).toBeTruthy();
  expect(e.message).toContain(field);
  return e;
};

describe("given the package's entry points", () => {
  it("when imported, then the runtime is an interface (no class, no internals) and openPostgresStore is there", async () => {
    expect(api).not.toHaveProperty("Runtime");
    expect(typeof api.openPostgresStore).toBe("function");
    for (const leaked of ["internals", "appendNew", "activate", "activateNew", "stopContext", "store", "projections"])
      expect(leaked in rt).toBe(false);
  });

  it("when the test kit is imported, then its lifecycle model is a plain object of named steps", () => {
    expect(typeof kit.lifecycleModel.send).toBe("function");
    expect(typeof kit.domainEventArb).toBe("function");
    expect(Object.getPrototypeOf(kit.lifecycleModel)).toBe(Object.prototype);
  });
});

describe("given bad input to a public method", () => {
  it("when a name or profile is not a string, then createContext refuses naming the field and writes nothing", async () => {
    const before = await store.headPosition();
    await refusal(rt.createContext({ name: 42 as never }), "name");
    await refusal(rt.createContext({ profile: {} as never }), "profile");
    await refusal(rt.createContext({ project: ["x"] as never }), "project");
    await refusal(rt.createContext("root" as never), "options");
    expect(await store.headPosition()).toBe(before);
  });

  it("when an id holds a NUL or is not a string, then every command refuses it before the store sees it", async () => {
    const before = await store.headPosition();
    await refusal(rt.send("a\u0000b", "hi"), "id");
    await refusal(rt.send(7 as never, "hi"), "id");
    await refusal(rt.stop(""), "id");
    await refusal(rt.pause("x\u0000"), "id");
    await refusal(rt.resume(null as never), "id");
    await refusal(rt.context("\u0000"), "id");
    await refusal(rt.children({} as never), "id");
    await refusal(rt.history("a\u0000"), "id");
    await refusal(rt.usage("a\u0000"), "id");
    await refusal(() => rt.actor("a\u0000"), "id");
    await refusal(rt.events({ contextId: "a\u0000" }), "contextId");
    await refusal(rt.events({ after: -1 }), "after");
    await refusal(rt.eventsPage({ limit: 0 }), "limit");
    await refusal(rt.audit("a\u0000"), "id");
    await refusal(rt.audit("x", { at: -1 }), "at");
    await refusal(rt.verify({ projections: "yes" as never }), "projections");
    await refusal(rt.verify({ since: { position: 1, hash: "nope" } }), "since");
    await refusal(rt.findRun({ runId: "" }), "runId");
    await refusal(rt.findRun({ messageId: "m", via: "smtp" as never }), "via");
    await refusal(rt.findRun({} as never), "via");
    expect(await store.headPosition()).toBe(before);
  });

  it("when the message is not a string, then send refuses naming `text`", async () => {
    const ctx = await rt.createContext();
    const before = await store.headPosition();
    await refusal(rt.send(ctx.id, 5 as never), "text");
    await refusal(rt.send(ctx.id, "   "), "text");
    expect(await store.headPosition()).toBe(before);
  });

  it("when the prompts folder or a profiles folder is missing, then createRuntime refuses naming the option", async () => {
    const missing = join(tmpdir(), "actorzero-no-such-folder");
    const before = await store.headPosition();
    const model = scriptedModel(() => ({ text: "ok" }));
    await refusal(createRuntime({ store, model, promptsDir: missing }), "promptsDir");
    await refusal(createRuntime({ store, model, profiles: [missing] }), "profiles[0]");
    const file = join(mkdtempSync(join(tmpdir(), "az-")), "plain.txt");
    writeFileSync(file, "not a folder");
    await refusal(createRuntime({ store, model, profiles: [file] }), "profiles[0]");
    await refusal(createRuntime({ store, model, profiles: "nope" as never }), "profiles");
    expect(await store.headPosition()).toBe(before);
  });
});

describe("given more than one page of log", () => {
  it("when events() is asked for the whole log, then it returns every event, not the first page", async () => {
    const many = await freshPgliteStore();
    try {
      const rows = Array.from({ length: 1205 }, (_, i) => ({
        type: "ContextRenamed" as const,
        eventId: crypto.randomUUID() as never,
        data: { name: `n${i}`, label: `n${i}` },
      }));
      await many.append("s1", rows, { expectedVersion: "no_stream" });
      const rt2 = await createRuntime({ store: many, model: scriptedModel(() => ({ text: "ok" })) });
      try {
        expect(await rt2.events()).toHaveLength(1205);
        expect(await rt2.events({ limit: 1100 })).toHaveLength(1100);
        const first = await rt2.eventsPage({ limit: 1000 });
        expect(first.events).toHaveLength(1000);
        expect(first.next).toBe(first.events.at(-1)!.globalPosition);
        const second = await rt2.eventsPage({ after: first.next!, limit: 1000 });
        expect(second.events).toHaveLength(205);
        expect(second.next).toBeNull();
      } finally {
        await rt2.close();
      }
    } finally {
      await many.close();
    }
  });
});

describe("given a run recorded on the log", () => {
  it("when its run id or the id of the message that started it is asked for, then findRun names its context; unknown ids find nothing", async () => {
    const ctx = await rt.createContext();
    const { runId, ended } = await rt.start(ctx.id, "hello", { via: "a2a", messageId: "m-public-api" });
    await ended;
    expect(await rt.findRun({ runId })).toEqual({ contextId: ctx.id, runId });
    expect(await rt.findRun({ messageId: "m-public-api", via: "a2a" })).toEqual({ contextId: ctx.id, runId });
    expect(await rt.findRun({ messageId: "m-public-api", via: "mcp" })).toBeNull();
    expect(await rt.findRun({ runId: "no-such-run" })).toBeNull();
  });

  it("when the audit is asked for, then it is the context's; cut before it existed or of an unknown id, it is not found", async () => {
    const before = await store.headPosition();
    const ctx = await rt.createContext();
    await rt.send(ctx.id, "hello");
    const report = await rt.audit(ctx.id);
    expect(report.context.id).toBe(ctx.id);
    expect(report.context.runs.map((r) => r.status)).toEqual(["completed"]);
    await expect(rt.audit(ctx.id, { at: before })).rejects.toMatchObject({ reason: "not_found" });
    await expect(rt.audit(crypto.randomUUID())).rejects.toMatchObject({ reason: "not_found" });
  });

  it("when the log is verified, then it holds together, and with projections the read models equal a rebuild", async () => {
    const alone = await rt.verify();
    expect([alone.ok, alone.problems, alone.projections]).toEqual([true, [], null]);
    expect(alone.lastPosition).toBe(await store.headPosition());
    const whole = await rt.verify({ projections: true });
    expect([whole.ok, whole.projections]).toEqual([true, { ok: true, differences: [] }]);
    expect(await rt.settledPosition()).toBe(await store.headPosition());
  });
});
