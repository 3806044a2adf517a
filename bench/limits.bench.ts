// Rate limits: how close a fan-out gets to its provider's limit when the preset knows it.
//
// - The 8 × 8 fan-out (82 model calls: A0, 8 A1, 64 A2, then the answers of the A1s and A0) through the real `openai`
//   client against a local server that allows LIMIT requests in any rolling second and answers 429 beyond
//   (test/support/rateLimitedServer.ts); the preset says the same (`requestsPerMinute: LIMIT × 60, rateWindowMs: 1000`).
// - Throughput against the limit: the shortest span the limit allows for the calls the server accepted
//   (LIMIT at once, then LIMIT each second: (⌈N / LIMIT⌉ − 1) s from the first to the last) over the span measured
//   at the server. 1 is the provider's limit exactly; the shortfall is each call's latency (a bucket's share comes
//   back a window after its call ended) and the time the tree takes to produce its next calls.
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { openAIModel } from "../src/models/openai.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { fanOutReply, startRateLimitedServer } from "../test/support/rateLimitedServer.ts";
import type { Row } from "./main.ts";

const quick = process.env.BENCH_QUICK === "1";
const FAN = 8;
const LIMIT = quick ? 20 : 10;
const WINDOW_MS = 1000;

export async function run(): Promise<Row[]> {
  const store = await openPgliteStore();
  const server = await startRateLimitedServer({ limit: LIMIT, windowMs: WINDOW_MS, reply: fanOutReply(FAN) });
  const rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-bench-rate-0123456789", baseURL: server.baseURL }),
    presets: { Default: { model: "m", requestsPerMinute: LIMIT * 60, rateWindowMs: WINDOW_MS } },
    limits: { passivateAfterMs: 50 },
  });
  try {
    const root = await rt.createContext({});
    const outcome = await rt.send(root.id, "split the work");
    if (outcome.status !== "completed") throw new Error(`the fan-out ended ${outcome.status}`);
    const n = server.accepted;
    const span = server.acceptedAt.at(-1)! - server.acceptedAt[0]!;
    const ideal = (Math.ceil(n / LIMIT) - 1) * WINDOW_MS;
    const perSecond = ((n - 1) / span) * 1000;
    return [
      {
        name: `limits: 8×8 fan-out under ${LIMIT} requests/s (${n} calls, ${server.refused} refused, busiest second ${server.maxInWindow})`,
        value: Number(perSecond.toFixed(2)),
        unit: "req/s",
      },
      {
        name: "limits: its throughput against the provider's limit",
        value: Number((ideal / span).toFixed(3)),
        unit: "×",
        target: "≥ 0.9×",
      },
    ];
  } finally {
    await rt.close();
    await server.close();
    await store.close();
  }
}
