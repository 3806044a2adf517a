// Server RSS with many event streams that start at position 0 of a big log and never read, beside the same
// server with none: what a stream far behind costs the server while its client does not drain.
// The clients run in a child process of their own (pausedStreams.mjs), so only the server's memory is measured.
import { spawn } from "node:child_process";
import path from "node:path";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { asRunId } from "../../src/events/ids.ts";
import { createRuntime, scriptedModel, serve } from "../../src/index.ts";
import type { Row } from "../main.ts";

const quick = process.env.BENCH_QUICK === "1";
const LOG = quick ? 20_000 : 100_000;
const STREAMS = 100;
const BATCH = 1000;
const SAMPLE_MS = 100;

const data = {
  runId: asRunId("run-1"),
  text: "Summarise the findings of the last three runs in two lines.",
  sender: "user" as const,
};
const metadata = { correlationId: "run-1", causationId: null, actor: "bench" };
const event = (): NewEvent => ({ type: "MessageReceived", data, metadata });

/** The highest RSS seen over `ms`, sampled every SAMPLE_MS, in MB. */
const peakRssMb = async (ms: number) => {
  let peak = 0;
  for (const end = performance.now() + ms; performance.now() < end;) {
    peak = Math.max(peak, process.memoryUsage.rss());
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
  }
  return peak / 1024 / 1024;
};

export const streamMemoryRows = async (): Promise<Row[]> => {
  const store = await openPgliteStore();
  for (let i = 0; i < LOG / BATCH; i++) {
    await store.append(`bench-${i}`, Array.from({ length: BATCH }, event), { expectedVersion: "no_stream" });
  }
  const rt = await createRuntime({
    store,
    model: scriptedModel(() => ({ text: "unused" })),
    limits: { passivateAfterMs: 60_000 },
  });
  const server = await serve(rt, { port: 0 });
  const idleMb = await peakRssMb(3000);
  const clients = spawn(
    process.execPath,
    [path.join(import.meta.dirname, "pausedStreams.mjs"), `${server.url}/v1/events/stream`, String(STREAMS)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      clients.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("ready") && resolve());
      clients.once("exit", (code) =>
        reject(new Error(`the stream clients exited ${code} before all ${STREAMS} streams were open`)),
      );
    });
    // Long enough for every stream to fill its connection and stall, shorter than the stall cut (30 s).
    const loadedMb = await peakRssMb(8000);
    const above = loadedMb - idleMb;
    return [
      { name: `server RSS, no stream (${LOG.toLocaleString("en")}-event log)`, value: idleMb, unit: "MB" },
      {
        name: `server RSS, ${STREAMS} non-reading streams from position 0`,
        value: loadedMb,
        unit: "MB",
        compareTo: "no stream",
        ratio: loadedMb / idleMb,
        target: `≤ 100 MB above no stream (${above.toFixed(0)} MB above)`,
      },
    ];
  } finally {
    clients.kill();
    await server.close({ whileDraining: () => rt.close() });
    await store.close();
  }
};
