// A compaction's summary call is a request like any other: under a preset whose provider allows one request per
// window, the summary and the call it served each wait for their own share, through the real `openai` client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { openAIModel } from "../../src/models/openai.ts";
import type { EventStore } from "../../src/events/store.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { startWindowServer, type WindowServer } from "../support/windowServer.ts";

const WINDOW = 5000;
const MAX_OUTPUT = 200;
// 400 a minute counted per 150 ms: one request in any 150 ms.
const RATE_WINDOW_MS = 150;
let store: EventStore;
let server: WindowServer;
let rt: Runtime;
const sent: { at: number; summary: boolean }[] = [];

beforeAll(async () => {
  store = await freshPgliteStore();
  server = await startWindowServer({ window: WINDOW, reserve: MAX_OUTPUT, resultWords: 150 });
  const fetch: typeof globalThis.fetch = async (input, init) => {
    sent.push({ at: performance.now(), summary: String(init?.body ?? "").includes("summar") });
    return globalThis.fetch(input, init);
  };
  rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-test", baseURL: server.baseURL, fetch }),
    presets: {
      Default: {
        model: "gpt-4o-mini",
        contextWindow: WINDOW,
        maxOutputTokens: MAX_OUTPUT,
        requestsPerMinute: 400,
        rateWindowMs: RATE_WINDOW_MS,
      },
    },
    limits: { modelRetries: 0, retryBaseMs: 5, retryMaxMs: 50 },
  });
});
afterAll(async () => {
  await rt.close();
  await server.close();
  await store.close();
});

describe("when a context under a rate-limited preset compacts its history", () => {
  it("its summary call takes a share of the preset's bucket: no two requests leave within one rate window", async () => {
    const root = await rt.createContext();
    let events = await rt.events({ contextId: root.id });
    for (let turn = 1; turn <= 30 && !events.some((e) => e.type === "HistoryCompacted" && e.data.calls > 0); turn++) {
      expect(await rt.send(root.id, `turn ${turn}`)).toMatchObject({ status: "completed" });
      events = await rt.events({ contextId: root.id });
    }
    expect(events.some((e) => e.type === "HistoryCompacted" && e.data.calls > 0)).toBe(true);
    expect(sent.some((s) => s.summary)).toBe(true);
    // A share comes back a window after its call ended, so each request leaves at least a window after the one before.
    const gaps = sent.slice(1).map((s, i) => s.at - sent[i]!.at);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(RATE_WINDOW_MS - 2);
  }, 120_000);
});
