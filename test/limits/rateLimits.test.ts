// Provider rate limits through the real `openai` client against a local server that refuses (429) beyond its limit:
// a 64-leaf fan-out (8 × 8 in parallel) completes with no failed run, each model call billed once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, openAIModel, type EventStore, type Presets, type Runtime } from "../../src/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { fanOutReply, startRateLimitedServer, type RateLimitedServer } from "../support/rateLimitedServer.ts";

const FAN = 8;
const ALL_CALLS = 1 + FAN + FAN * FAN + 1 + FAN;
// The provider allows 600 requests a minute, counted per second: 10 in any rolling second.
const LIMIT = 10;
const WINDOW_MS = 1000;

let store: EventStore;
let server: RateLimitedServer | null = null;
let rt: Runtime | null = null;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterEach(async () => {
  await rt?.close();
  await server?.close();
  rt = server = null;
});
afterAll(async () => {
  await store.close();
});

/** The fan-out against a fresh server, with a fetch that notes when each request left and when its answer came. */
const runFanOut = async (presets: Presets) => {
  server = await startRateLimitedServer({ limit: LIMIT, windowMs: WINDOW_MS, reply: fanOutReply(FAN) });
  const exchanges: { sentAt: number; answeredAt: number; status: number; retryAfterMs: number | null }[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const sentAt = Date.now();
    const res = await globalThis.fetch(input, init);
    const retry = res.headers.get("retry-after-ms");
    exchanges.push({
      sentAt,
      answeredAt: Date.now(),
      status: res.status,
      retryAfterMs: retry === null ? null : Number(retry),
    });
    return res;
  };
  rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-test-rate-0123456789", baseURL: server.baseURL, fetch }),
    presets,
    limits: { retryBaseMs: 5, retryMaxMs: 50, passivateAfterMs: 50 },
  });
  const root = await rt.createContext({});
  const outcome = await rt.send(root.id, "split the work");
  const contexts = await rt.contexts({ rootContextId: root.id });
  const events = (await rt.events()).filter((e) => contexts.some((c) => c.id === e.streamId));
  const { rollup } = await rt.usage(root.id);
  return { outcome, contexts, events, rollup: rollup!, exchanges, server };
};

describe("when the preset knows the provider's limit", () => {
  it("completes the 64-leaf fan-out without a single 429: the server never sees more than its limit", async () => {
    const { outcome, contexts, events, rollup, server } = await runFanOut({
      Default: { model: "m", requestsPerMinute: 600, rateWindowMs: WINDOW_MS },
    });
    expect(outcome).toMatchObject({ status: "completed", response: "all parts done" });
    expect(contexts).toHaveLength(1 + FAN + FAN * FAN);
    expect(events.filter((e) => e.type === "RunFailed")).toEqual([]);
    expect(server.refused).toBe(0);
    expect(server.maxInWindow).toBeLessThanOrEqual(LIMIT);
    expect(server.accepted).toBe(ALL_CALLS);
    // Every call billed once: the usage folded from the log is what the server reported.
    expect(rollup).toMatchObject({
      modelCalls: server.accepted,
      inputTokens: server.usage.inputTokens,
      outputTokens: server.usage.outputTokens,
    });
    // Calls past the limit waited, visibly.
    expect(events.filter((e) => e.type === "ModelCallQueued").length).toBeGreaterThan(ALL_CALLS - 2 * LIMIT);
  }, 60_000);
});

describe("when only the provider knows its limit and answers 429 beyond it", () => {
  it("pauses every caller on a 429, retries without failing a run, and bills each call once", async () => {
    const { outcome, contexts, events, rollup, exchanges, server } = await runFanOut({ Default: { model: "m" } });
    expect(outcome).toMatchObject({ status: "completed", response: "all parts done" });
    expect(
      contexts
        .filter((c) => !(c.status === "idle" && c.lastRun?.status === "completed"))
        .map((c) => ({ id: c.id, status: c.status, failure: c.failure, lastRun: c.lastRun?.status })),
    ).toEqual([]);
    expect(events.filter((e) => e.type === "RunFailed")).toEqual([]);
    expect(server.refused).toBeGreaterThan(0);
    // Each 429 is on the log as a retried failure; each call was answered once and billed once.
    const limited = events.filter((e) => e.type === "ModelCallFailed" && e.data.reason === "rate_limited");
    expect(limited).toHaveLength(server.refused);
    expect(server.accepted).toBe(ALL_CALLS);
    expect(rollup).toMatchObject({
      modelCalls: server.accepted,
      inputTokens: server.usage.inputTokens,
      outputTokens: server.usage.outputTokens,
    });
    // The pause is the provider's, not the call's: no request left while one was on (50 ms allowed for a call
    // admitted just before the 429 came back).
    const pauses = exchanges
      .filter((x) => x.status === 429 && x.retryAfterMs !== null && x.retryAfterMs > 120)
      .map((x) => ({ from: x.answeredAt + 50, to: x.answeredAt + x.retryAfterMs! - 20 }));
    expect(pauses.length).toBeGreaterThan(0);
    const sentInPause = exchanges.filter((x) => pauses.some((p) => x.sentAt > p.from && x.sentAt < p.to));
    expect(sentInPause).toEqual([]);
  }, 60_000);
});
