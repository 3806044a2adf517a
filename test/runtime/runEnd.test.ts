import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPgliteStore } from "../support/pglite.ts";
import { createRuntime, scriptedModel, StoreError, type EventStore, type ModelPort } from "../../src/index.ts";

const TERMINAL = new Set(["RunCompleted", "RunStopped", "RunFailed", "RunInterrupted"]);
let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store.close();
});

/** The shared store, refusing every append as a full disk would while `broken()` says so; closing it leaves the store open. */
const diskFullWhen = (broken: () => boolean): EventStore =>
  Object.create(store, {
    append: {
      value: (...a: Parameters<EventStore["append"]>) =>
        broken() ? Promise.reject(new StoreError("unavailable", "disk full")) : store.append(...a),
      writable: true,
      configurable: true,
    },
    close: { value: async () => undefined, writable: true, configurable: true },
  });

const terminalsOf = async (id: string) => (await store.readStream(id)).filter((e) => TERMINAL.has(e.type));

/** `depth` arrays nested in one another: JSON the model port hands over, too deep for the log to take. */
const nested = (depth: number): unknown => {
  let v: unknown = [];
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

describe("given a run whose last append is refused", () => {
  it("when a custom model port sends tool arguments nested 10,000 deep, then the run ends in the log once, as failed", async () => {
    const model: ModelPort = {
      call: async () => ({ toolCalls: [{ id: "deep", name: "response", arguments: { text: nested(10_000) } }] }),
    };
    const rt = await createRuntime({ store, model, limits: { passivateAfterMs: 50 } });
    const ctx = await rt.createContext();
    const outcome = await rt.send(ctx.id, "go");
    expect(outcome.status).toBe("failed");
    const ends = await terminalsOf(ctx.id);
    expect(ends.map((e) => e.type)).toEqual(["RunFailed"]);
    // The real reason: what the store said of the staged tool call, not a generic failure.
    expect(ends[0]!.data).toMatchObject({ reason: "internal", message: expect.stringMatching(/depth|nest|stack/i) });
    expect(outcome.failure).toEqual({ reason: "internal", message: (ends[0]!.data as { message: string }).message });
    expect((await rt.context(ctx.id))!.status).toBe("failed");
    // The next message starts a fresh run: nothing is left running.
    await rt.close();
  });

  it("when the store fails for good mid-run, then the next open records RunInterrupted once", async () => {
    let broken = false;
    const flaky = diskFullWhen(() => broken);
    const model = scriptedModel(() => {
      broken = true;
      return { text: "never recorded" };
    });
    const rt = await createRuntime({ store: flaky, model, limits: { passivateAfterMs: 50 } });
    const ctx = await rt.createContext();
    const outcome = await rt.send(ctx.id, "go");
    expect(outcome.status).toBe("failed");
    expect(outcome.failure?.message).toContain("disk full");
    await rt.close();
    broken = false;
    const again = await createRuntime({ store, model: scriptedModel(() => ({ text: "ok" })), recovery: "interrupt" });
    const ends = await terminalsOf(ctx.id);
    expect(ends.map((e) => e.type)).toEqual(["RunInterrupted"]);
    expect((await again.context(ctx.id))!.status).toBe("failed");
    await again.close();
  });
});

describe("given a run whose end the store refused, and a store that works again by close()", () => {
  it("when the runtime closes, then close() records the run as interrupted, once", async () => {
    let broken = false;
    const flaky = diskFullWhen(() => broken);
    const model = scriptedModel(() => {
      broken = true;
      return { text: "never recorded" };
    });
    const rt = await createRuntime({ store: flaky, model, limits: { passivateAfterMs: 50 } });
    const ctx = await rt.createContext();
    expect((await rt.send(ctx.id, "go")).status).toBe("failed");
    expect(await terminalsOf(ctx.id)).toEqual([]);
    broken = false;
    await rt.close();
    const ends = await terminalsOf(ctx.id);
    expect(ends.map((e) => e.type)).toEqual(["RunInterrupted"]);
    // The reason the end could not be written is kept, not lost.
    expect(ends[0]!.data).toMatchObject({ reason: expect.stringContaining("disk full") });
    const reopened = await createRuntime({ store, model: scriptedModel(() => ({ text: "ok" })) });
    expect((await reopened.context(ctx.id))!.failure).toEqual({
      reason: "interrupted",
      message: expect.stringContaining("disk full"),
    });
    await reopened.close();
  });

  it("when the next message comes before close(), then the refused end is recorded as interrupted with its reason, then the new run", async () => {
    let broken = false;
    const flaky = diskFullWhen(() => broken);
    let turn = 0;
    const model = scriptedModel(() => {
      if (++turn === 1) broken = true;
      return { text: `answer ${turn}` };
    });
    const rt = await createRuntime({ store: flaky, model, limits: { passivateAfterMs: 50 } });
    const ctx = await rt.createContext();
    expect((await rt.send(ctx.id, "go")).failure?.message).toContain("disk full");
    broken = false;
    expect(await rt.send(ctx.id, "again")).toMatchObject({ status: "completed", response: "answer 2" });
    const ends = await terminalsOf(ctx.id);
    expect(ends.map((e) => e.type)).toEqual(["RunInterrupted", "RunCompleted"]);
    expect(ends[0]!.data).toMatchObject({ reason: expect.stringContaining("disk full") });
    await rt.close();
    expect((await terminalsOf(ctx.id)).map((e) => e.type)).toEqual(["RunInterrupted", "RunCompleted"]);
  });
});

describe("given a model answer the log stores differently", () => {
  it("when the model answers with a NUL, then the next model request carries the text the log holds", async () => {
    let turn = 0;
    const model = scriptedModel(() => (++turn === 1 ? { text: "a\u0000b" } : { text: "second" }));
    const rt = await createRuntime({ store, model, limits: { passivateAfterMs: 50 } });
    const ctx = await rt.createContext();
    await rt.send(ctx.id, "one");
    await rt.send(ctx.id, "two");
    const logged = (await store.readStream(ctx.id)).find((e) => e.type === "ModelReplied")!;
    const loggedText = (logged.data as { text: string }).text;
    expect(loggedText).not.toContain("\u0000");
    const sent = model.requests[1]!.messages.find((m) => m.role === "assistant")!;
    expect(sent.content).toBe(loggedText);
    await rt.close();
  });

  it("when the model answers with a NUL and arguments in an order JSONB changes, then the model, rt.history() and a replay read the same text", async () => {
    let turn = 0;
    const model = scriptedModel(() =>
      ++turn === 1
        ? { text: "x\u0000y", toolCalls: [{ id: "c1", name: "no_such_tool", arguments: { zeta: "\u0000", a: 1 } }] }
        : { text: "done" },
    );
    const rt = await createRuntime({ store, model, limits: { passivateAfterMs: 50 } });
    const ctx = await rt.createContext();
    await rt.send(ctx.id, "go");
    const live = model.requests[1]!.messages.slice(1);
    const assistant = live.find((m) => m.role === "assistant")!;
    expect(JSON.stringify(assistant)).not.toContain("\\u0000");
    expect(assistant).toMatchObject({
      content: "x\uFFFDy",
      tool_calls: [{ function: { arguments: '{"a":1,"zeta":"\uFFFD"}' } }],
    });
    const history = await rt.history(ctx.id);
    expect(history.slice(0, live.length)).toEqual(live);
    await rt.close();
    const replay = await createRuntime({ store, model: scriptedModel(() => ({ text: "unused" })) });
    expect(await replay.history(ctx.id)).toEqual(history);
    await replay.close();
  });
});
