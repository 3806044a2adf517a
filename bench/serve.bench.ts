// Serve figures: events/s delivered to 100 Server-Sent Events clients while runs append, beside the same runs with no
// client; and the server's RSS with 100 streams far behind whose clients do not read (support/streamMemory.ts).
import { z } from "zod";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { createRuntime, scriptedModel, serve } from "../src/index.ts";
import { defineTool } from "../src/tools/defineTool.ts";
import type { Row } from "./main.ts";
import { streamMemoryRows } from "./support/streamMemory.ts";

const quick = process.env.BENCH_QUICK === "1";
const CLIENTS = 100;
const RUNS = quick ? 5 : 30;
const STEPS = 10;

const noop = defineTool({
  name: "noop",
  description: "does nothing",
  input: z.object({ i: z.number() }),
  run: ({ i }) => `done ${i}`,
});
const stepper = () =>
  scriptedModel((req) => {
    const steps = req.messages.filter((m) => m.role === "assistant").length;
    if (steps < STEPS)
      return { toolCalls: [{ id: `s${steps}`, name: "noop", arguments: JSON.stringify({ i: steps }) }] };
    return { text: "finished" };
  });

/** Reads one SSE response until the event with id `target` arrives; resolves with how many events it got. */
const follow = async (res: Response, target: () => number | null): Promise<number> => {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let count = 0;
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) return count;
    buffer += chunk.value;
    let i: number;
    while ((i = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      const id = /^id: (\d+)$/m.exec(block)?.[1];
      if (id === undefined) continue;
      count++;
      const t = target();
      if (t !== null && Number(id) >= t) {
        await reader.cancel();
        return count;
      }
    }
  }
};

const runAll = async (rt: Awaited<ReturnType<typeof createRuntime>>) => {
  const roots = [];
  for (let i = 0; i < RUNS; i++) roots.push(await rt.createContext({ name: `bench-${i}` }));
  const started = performance.now();
  await Promise.all(roots.map((r) => rt.send(r.id, "take ten steps")));
  return performance.now() - started;
};

export const run = async (): Promise<Row[]> => {
  const alone = await openPgliteStore();
  const rtAlone = await createRuntime({
    store: alone,
    model: stepper(),
    tools: [noop],
    limits: { passivateAfterMs: 60_000 },
  });
  const aloneMs = await runAll(rtAlone);
  await rtAlone.close();
  await alone.close();

  const store = await openPgliteStore();
  const rt = await createRuntime({ store, model: stepper(), tools: [noop], limits: { passivateAfterMs: 60_000 } });
  const server = await serve(rt, { port: 0 });
  let target: number | null = null;
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => fetch(`${server.url}/v1/events/stream`)));
  const started = performance.now();
  const reading = clients.map((res) => follow(res, () => target));
  const runsMs = await runAll(rt);
  target = await store.headPosition();
  const counts = await Promise.all(reading);
  const deliveredMs = performance.now() - started;
  const delivered = counts.reduce((a, b) => a + b, 0);
  await server.close({ whileDraining: () => rt.close() });
  await store.close();
  return [
    { name: `runs with no client (${RUNS} concurrent runs × ${STEPS + 1} steps)`, value: aloneMs, unit: "ms" },
    {
      name: `the same runs with ${CLIENTS} SSE clients following`,
      value: runsMs,
      unit: "ms",
      compareTo: "no client",
      ratio: runsMs / aloneMs,
      target: "≤ 2× no client",
    },
    {
      name: `events/s delivered to ${CLIENTS} SSE clients (${delivered} deliveries)`,
      value: (delivered * 1000) / deliveredMs,
      unit: "events/s",
    },
    ...(await streamMemoryRows()),
  ];
};
