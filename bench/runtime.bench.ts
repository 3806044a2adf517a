// Runtime figures: overhead per step beside raw appends of the same events; memory per live and per passivated context.
import { z } from "zod";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { defineTool } from "../src/tools/defineTool.ts";
import type { ModelPort } from "../src/models/port.ts";
import type { Row } from "./main.ts";
import { recordingStore, sendsAlternatingWithRaw } from "./support/recordingStore.ts";
import { heapUsed } from "./support/heap.ts";

const quick = process.env.BENCH_QUICK === "1";
const RUNS = quick ? 20 : 100;
const STEPS = 10; // tool steps per run, then a final answer
const CONTEXTS = quick ? 200 : 1_000;
const STORED = quick ? 10_000 : 100_000;

const noop = defineTool({
  name: "noop",
  description: "does nothing",
  input: z.object({ i: z.number() }),
  run: ({ i }) => `done ${i}`,
});

/**
 * A zero-latency model: STEPS tool calls, then an answer. A plain port, not the scripted model, which
 * keeps a copy of every request (the whole conversation each time): the model's own cost, not the runtime's.
 */
const stepper = (): ModelPort => ({
  call: async (req) => {
    const steps = req.messages.filter((m) => m.role === "assistant").length;
    if (steps < STEPS)
      return {
        toolCalls: [{ id: `s${steps}`, name: "noop", arguments: JSON.stringify({ i: steps }) }],
        usage: { inputTokens: 1, outputTokens: 1 },
      };
    return { text: "finished", usage: { inputTokens: 1, outputTokens: 1 } };
  },
});

const ROUNDS = 5; // runtime and raw alternate round by round, after a warm-up round of each

const stepOverhead = async (): Promise<Row[]> => {
  const base = await openPgliteStore();
  const store = recordingStore(base);
  const rt = await createRuntime({ store, model: stepper(), tools: [noop], limits: { passivateAfterMs: 60_000 } });
  const timed = await sendsAlternatingWithRaw(base, store, rt, {
    rounds: ROUNDS,
    perRound: RUNS / ROUNDS,
    message: "take ten steps",
  });
  await rt.close();
  await base.close();
  const steps = RUNS * (STEPS + 1);
  const events = timed.appends.reduce((n, a) => n + a.events.length, 0);
  return [
    {
      name: `raw appends of the same events (${events} events in ${timed.appends.length} appends)`,
      value: (timed.rawMs * 1000) / steps,
      unit: "µs/step",
    },
    {
      name: `runtime step (zero-latency model, one tool call; ${ROUNDS} rounds alternating with raw, median ratio)`,
      value: (timed.runtimeMs * 1000) / steps,
      unit: "µs/step",
      compareTo: "raw",
      ratio: timed.ratio,
      target: "≤ 1.5× raw",
    },
  ];
};

/** A model port that keeps nothing, so the heap measures the runtime alone (the scripted model records every request). */
const forgetful: ModelPort = { call: async () => ({ text: "ok" }) };

/** Heap per context after touching CONTEXTS contexts once, with actors kept (`live`) or passivated after 50 ms. */
const heapPerTouchedContext = async (passivateAfterMs: number): Promise<number> => {
  const store = await openPgliteStore();
  const rt = await createRuntime({ store, model: forgetful, limits: { passivateAfterMs } });
  const ids: string[] = [];
  for (let i = 0; i < CONTEXTS; i++) ids.push((await rt.createContext({ name: `m-${i}` })).id);
  // Give the idle delay time to pass (only matters when it is short): a new context is idle, and passivated
  // like any other, so the baseline waits for that too (or the ones passivated later read as negative growth).
  const idle = () => new Promise((r) => setTimeout(r, passivateAfterMs < 1_000 ? passivateAfterMs * 4 + 100 : 0));
  await idle();
  const before = await heapUsed();
  for (const id of ids) await rt.send(id, "hello");
  await idle();
  const perContext = ((await heapUsed()) - before) / CONTEXTS;
  const active = ids.filter((id) => rt.actor(id) !== undefined).length;
  await rt.close();
  await store.close();
  if (passivateAfterMs > 60_000 && active !== CONTEXTS)
    throw new Error(`expected ${CONTEXTS} live actors, found ${active}`);
  if (passivateAfterMs < 1_000 && active !== 0)
    throw new Error(`expected every actor passivated, found ${active} live`);
  return perContext;
};

const memory = async (): Promise<Row[]> => [
  {
    name: `live idle context (${CONTEXTS} touched, actors kept)`,
    value: (await heapPerTouchedContext(3_600_000)) / 1024,
    unit: "KB/context",
    target: "< 10 KB",
  },
  {
    name: `passivated context (${CONTEXTS} touched, actors stopped)`,
    value: (await heapPerTouchedContext(50)) / 1024,
    unit: "KB/context",
  },
];

const touchedFew = async (): Promise<Row[]> => {
  const store = await openPgliteStore();
  // STORED contexts written straight into the log, as valid ContextCreated rows.
  await store.sql.query(
    `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
     SELECT gen_random_uuid(), 'ctx-' || g, 1, 'ContextCreated', 1,
       jsonb_build_object('contextId', 'ctx-' || g, 'name', 'c' || g, 'label', 'c' || g, 'profile', 'default', 'project', null,
         'agentNumber', 0, 'depth', 0, 'kind', 'root', 'parentContextId', null, 'parentAgentNumber', null,
         'rootContextId', 'ctx-' || g, 'slot', null, 'modelOverride', null),
       '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now()
     FROM generate_series(1, $1) g`,
    [STORED],
  );
  const model = forgetful;
  const idle = await createRuntime({ store, model, limits: { passivateAfterMs: 100 } });
  const untouched = await heapUsed();
  const touched = Math.min(1_000, STORED);
  for (let i = 1; i <= touched; i++) await idle.send(`ctx-${i * Math.floor(STORED / touched)}`, "hello");
  await new Promise((r) => setTimeout(r, 500));
  const after = await heapUsed();
  await idle.close();
  await store.close();
  return [
    {
      name: `heap growth after touching ${touched} of ${STORED} stored contexts`,
      value: (after - untouched) / 1024 / 1024,
      unit: "MB",
      target: "< 50 MB",
    },
  ];
};

export async function run(): Promise<Row[]> {
  return [...(await stepOverhead()), ...(await memory()), ...(await touchedFew())];
}
