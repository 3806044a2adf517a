// A conversation longer than the model's window, through the real `openai` client against a local server that
// enforces the window: compaction keeps every request inside it, and the log keeps every original message.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../src/runtime/runtime.ts";
import type { EventStore } from "../../src/events/store.ts";
import type { WindowServer } from "../support/windowServer.ts";
import { openWindowedRuntime, type WindowedRuntime } from "../support/windowedRuntime.ts";

const WINDOW = 6000;
const MAX_OUTPUT = 200;
const TURNS = 300;
let store: EventStore;
let server: WindowServer;
let rt: Runtime;
let opened: WindowedRuntime;

beforeAll(async () => {
  opened = await openWindowedRuntime({ window: WINDOW, maxOutput: MAX_OUTPUT });
  ({ store, server, rt } = opened);
});
afterAll(() => opened.close());

describe(`when a root talks for ${TURNS} turns, delegating each to a reused child, under a ${WINDOW}-token window`, () => {
  it("completes every turn, never sends an oversize request, compacts both contexts on their own, and keeps every message", async () => {
    const root = await rt.createContext();
    for (let turn = 1; turn <= TURNS; turn++) {
      const r = await rt.send(root.id, `turn ${turn}: please handle this`);
      expect(r).toMatchObject({ status: "completed", response: `done ${turn}` });
    }
    expect(server.refused).toBe(0);
    expect(server.largest + MAX_OUTPUT).toBeLessThanOrEqual(WINDOW);
    const [child] = await rt.children(root.id);
    expect(child).toBeDefined();
    const rootEvents = await rt.events({ contextId: root.id });
    const childEvents = await rt.events({ contextId: child!.id });
    const compactions = (events: typeof rootEvents) => events.filter((e) => e.type === "HistoryCompacted");
    expect(compactions(rootEvents).length).toBeGreaterThan(0);
    expect(compactions(childEvents).length).toBeGreaterThan(0);
    // The log keeps every original message; the model's view is the compacted one.
    const full = await rt.history(root.id, { full: true });
    expect(full.filter((m) => m.role === "user").map((m) => m.content)).toEqual(
      Array.from({ length: TURNS }, (_, i) => `turn ${i + 1}: please handle this`),
    );
    const seen = await rt.history(root.id);
    expect(seen.length).toBeLessThan(full.length);
    expect(String(seen[0]!.content)).toMatch(/^Summary of the earlier conversation/);
    // The child's summaries are its own: none reaches the parent's history.
    const childSummaries = compactions(childEvents).map((e) => (e.type === "HistoryCompacted" ? e.data.summary : ""));
    expect(full.some((m) => childSummaries.includes(String(m.content)))).toBe(false);
    // The compaction calls are model calls in the usage.
    const usage = await rt.usage(root.id);
    const calls =
      rootEvents.filter((e) => e.type === "ModelReplied").length +
      compactions(rootEvents).reduce((n, e) => n + (e.type === "HistoryCompacted" ? e.data.calls : 0), 0);
    expect(usage.own?.modelCalls).toBe(calls);
  }, 600_000);
});
