// The endpoint's own verdict: a 400 saying the request is too long gets one compaction and a retry; a second
// such answer fails the run with `context_overflow`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../src/runtime/runtime.ts";
import type { EventStore } from "../../src/events/store.ts";
import type { WindowServer } from "../support/windowServer.ts";
import { openWindowedRuntime, type WindowedRuntime } from "../support/windowedRuntime.ts";

const WINDOW = 8000;
const MAX_OUTPUT = 200;
let store: EventStore;
let server: WindowServer;
let rt: Runtime;
let opened: WindowedRuntime;

beforeAll(async () => {
  opened = await openWindowedRuntime({ window: WINDOW, maxOutput: MAX_OUTPUT, resultWords: 120 });
  ({ store, server, rt } = opened);
});
afterAll(() => opened.close());

describe("when the endpoint refuses a request our count let through", () => {
  it("compacts once (trigger `endpoint`), retries at once, and completes the turn", async () => {
    server.window = WINDOW;
    const root = await rt.createContext();
    for (let turn = 1; turn <= 4; turn++)
      expect(await rt.send(root.id, `turn ${turn}`)).toMatchObject({ status: "completed" });
    expect(server.refused).toBe(0);
    // The next request grows past what the server now takes, though the runtime's window would let it through.
    server.window = server.largest + MAX_OUTPUT + 5;
    const r = await rt.send(root.id, "turn 5");
    expect(r).toMatchObject({ status: "completed", response: "done 5" });
    const events = await rt.events({ contextId: root.id });
    // The child, whose history is as long, may be refused too and compacts the same way on its own.
    expect(server.refused).toBeGreaterThanOrEqual(1);
    const failed = events.filter((e) => e.type === "ModelCallFailed");
    expect(failed.map((e) => e.data)).toMatchObject([
      { step: 1, attempt: 1, reason: "context_overflow", retryable: false, retryInMs: 0 },
    ]);
    const compacted = events.filter((e) => e.type === "HistoryCompacted");
    expect(compacted.map((e) => e.data)).toMatchObject([{ step: 1, trigger: "endpoint" }]);
    // The retry went at once, and after the compaction.
    const at = (type: string) => events.findIndex((e) => e.type === type);
    expect(at("ModelCallFailed")).toBeLessThan(at("HistoryCompacted"));
  });
});

describe("when the endpoint refuses the request again after the compaction", () => {
  it("fails the run with `context_overflow` and a message saying what did not fit", async () => {
    server.window = WINDOW;
    const root = await rt.createContext();
    expect(await rt.send(root.id, "turn 1")).toMatchObject({ status: "completed" });
    server.window = 50;
    const refusedBefore = server.refused;
    const r = await rt.send(root.id, "turn 2");
    expect(r).toMatchObject({ status: "failed", failure: { reason: "context_overflow" } });
    expect(r.failure?.message).toMatch(/context/);
    expect(server.refused - refusedBefore).toBeGreaterThanOrEqual(1);
    expect(server.refused - refusedBefore).toBeLessThanOrEqual(2);
    const ended = (await rt.events({ contextId: root.id })).filter((e) => e.type === "RunFailed");
    expect(ended.map((e) => e.data)).toMatchObject([{ reason: "context_overflow" }]);
  });
});
