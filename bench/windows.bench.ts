// Context windows: the cost of a long conversation under a small window, compaction calls included.
//
// - A root talks for TURNS turns, delegating each to a reused child (`reset: false`), through the real `openai`
//   client against a local server that enforces an 8,000-token window (test/support/windowServer.ts).
// - Cost per turn: the tokens the server was sent and answered (prompt + completion) for every call of the turn,
//   the summary calls of compactions included. Growth: the median cost of the last three batches of BATCH turns
//   over that of the first three. Without compaction it grows with the history; with it, it levels off.
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { openAIModel } from "../src/models/openai.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { startWindowServer } from "../test/support/windowServer.ts";
import type { Row } from "./main.ts";

const quick = process.env.BENCH_QUICK === "1";
const WINDOW = 8000;
const MAX_OUTPUT = 400;
const TURNS = quick ? 120 : 300;
const BATCH = 20;
const GROWTH_BATCHES = 3;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export async function run(): Promise<Row[]> {
  const store = await openPgliteStore();
  const server = await startWindowServer({ window: WINDOW, reserve: MAX_OUTPUT });
  const rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-bench", baseURL: server.baseURL }),
    presets: { Default: { model: "gpt-4o-mini", contextWindow: WINDOW, maxOutputTokens: MAX_OUTPUT } },
  });
  try {
    const root = await rt.createContext({ name: "long" });
    const perTurn: number[] = [];
    let seen = 0;
    for (let turn = 1; turn <= TURNS; turn++) {
      const r = await rt.send(root.id, `turn ${turn}: please handle this`);
      if (r.status !== "completed") throw new Error(`turn ${turn} ended ${r.status}: ${r.failure?.message ?? ""}`);
      perTurn.push(server.prompts.slice(seen).reduce((n, p) => n + p.tokens + 12, 0));
      seen = server.prompts.length;
    }
    const batches: number[] = [];
    for (let i = 0; i + BATCH <= perTurn.length; i += BATCH)
      batches.push(perTurn.slice(i, i + BATCH).reduce((a, b) => a + b, 0) / BATCH);
    const growth = median(batches.slice(-GROWTH_BATCHES)) / median(batches.slice(0, GROWTH_BATCHES));
    return [
      {
        name: `windows: ${TURNS} turns on one root, each delegated to a reused child, ${WINDOW}-token window: tokens per turn (summary calls included)`,
        value: Math.round(perTurn.reduce((a, b) => a + b, 0) / TURNS),
        unit: "tokens/turn",
      },
      {
        name: `windows: cost per turn growth, last ${GROWTH_BATCHES} batches of ${BATCH} over the first ${GROWTH_BATCHES} (${server.summaries} summary calls, ${server.refused} oversize requests)`,
        value: Number(growth.toFixed(2)),
        unit: "×",
        target: "≤ 1.2×",
      },
    ];
  } finally {
    await rt.close();
    await server.close();
    await store.close();
  }
}
