// Ecosystem figures: what streaming to a live listener adds to a delegation, and MCP tool calls run in parallel.
// - Streaming: a 3-call delegation (A0 delegates, A1 answers, A0 composes) through the real `openai` client against a
//   zero-latency server in its own process, by two runtimes in alternating blocks, each with a listener on the log:
//   one without deltas (plain JSON exchanges), one with `{ deltas: true }` (streamed in 4-character chunks).
// - MCP: the registry's everything server over stdio, one tool call of 200 ms beside 8 of them as `parallel` jobs.
import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { isLiveDelta } from "../src/runtime/liveDeltas.ts";
import { openAIModel } from "../src/models/openai.ts";
import { scriptedModel } from "../src/models/scripted.ts";
import type { ModelRequest } from "../src/models/port.ts";
import type { Row } from "./main.ts";

const quick = process.env.BENCH_QUICK === "1";
const TRIPS = quick ? 15 : 150;
const WARM_UP = quick ? 3 : 10;
const MCP_RUNS = quick ? 3 : 10;
const MCP_CALL_S = 0.2;

/** The zero-latency endpoint in a child process (its own work is not the client's), and its base URL. */
const startEndpoint = async (): Promise<{ baseURL: string; close(): void }> => {
  const child = fork(fileURLToPath(new URL("./support/streamingServer.mjs", import.meta.url)), [], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once("data", (b: Buffer) => resolve(b.toString().trim()));
    child.once("exit", (code) => reject(new Error(`the bench endpoint exited (${code})`)));
  });
  return { baseURL: `http://127.0.0.1:${port}/v1`, close: () => void child.kill() };
};

/** A runtime over its own store sending delegations to the endpoint, its trips streamed to a listener or not. */
const delegator = async (baseURL: string, streamed: boolean) => {
  const store = await openPgliteStore();
  const rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-bench-0123456789", baseURL, model: "bench-model" }),
    presets: { Default: { model: "bench-model" } },
    limits: { passivateAfterMs: 60_000 },
  });
  let deltas = 0;
  // Both have a listener on the log, so the difference is the streaming alone (without deltas the adapter does not stream).
  const unsubscribe = streamed
    ? await rt.subscribe((e) => void (isLiveDelta(e) && deltas++), { deltas: true })
    : await rt.subscribe(() => {});
  let trips = 0;
  const trip = async () => {
    const root = await rt.createContext({ name: `trip-${trips++}` });
    const r = await rt.send(root.id, "plan a day");
    if (r.status !== "completed" || (await rt.children(root.id)).length !== 1)
      throw new Error(`delegation did not complete: ${r.status} ${r.failure?.message}`);
  };
  /** Milliseconds spent on `n` trips. */
  const block = async (n: number) => {
    const started = performance.now();
    for (let i = 0; i < n; i++) await trip();
    return performance.now() - started;
  };
  const close = async () => {
    unsubscribe();
    await rt.close();
    await store.close();
    if (streamed !== deltas > 0) throw new Error(`the streaming setup did not hold (${deltas} deltas)`);
  };
  return { block, close };
};

const streaming = async (): Promise<Row[]> => {
  const endpoint = await startEndpoint();
  const plain = await delegator(endpoint.baseURL, false);
  const streamed = await delegator(endpoint.baseURL, true);
  let plainMs = 0;
  let streamedMs = 0;
  try {
    await plain.block(WARM_UP);
    await streamed.block(WARM_UP);
    // Blocks alternate, so the machine's drift (JIT, other work) hits both.
    const blocks = 5;
    for (let i = 0; i < blocks; i++) {
      plainMs += await plain.block(TRIPS / blocks);
      streamedMs += await streamed.block(TRIPS / blocks);
    }
  } finally {
    await plain.close();
    await streamed.close();
    endpoint.close();
  }
  const perTrip = (ms: number) => ms / TRIPS;
  return [
    {
      name: "delegation, 3 model calls over HTTP, not streamed (a listener without deltas)",
      value: perTrip(plainMs),
      unit: "ms/trip",
    },
    {
      name: "the same, streamed to a live listener (4-character chunks)",
      value: perTrip(streamedMs),
      unit: "ms/trip",
      compareTo: "not streamed",
      ratio: streamedMs / plainMs,
      target: "≤ 1.05× not streamed",
    },
  ];
};

const mcpParallel = async (): Promise<Row[]> => {
  const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");
  const store = await openPgliteStore();
  const tool = "everything__trigger-long-running-operation";
  const args = { duration: MCP_CALL_S, steps: 1 };
  const answered = (req: ModelRequest) => req.messages.at(-1)?.role === "tool";
  const model = scriptedModel((req) => {
    if (answered(req)) return { text: "done" };
    const fan = String(req.messages.at(-1)?.content) === "eight";
    const calls = Array.from({ length: 8 }, () => ({ name: tool, arguments: args }));
    return fan
      ? { toolCalls: [{ id: "p", name: "parallel", arguments: JSON.stringify({ tool_calls: calls }) }] }
      : { toolCalls: [{ id: "one", name: tool, arguments: JSON.stringify(args) }] };
  });
  const rt = await createRuntime({
    store,
    model,
    mcpServers: { everything: { type: "stdio", command: process.execPath, args: [everything, "stdio"] } },
    limits: { passivateAfterMs: 60_000 },
  });
  const timed = async (text: "one" | "eight") => {
    const root = await rt.createContext();
    const started = performance.now();
    const r = await rt.send(root.id, text);
    const ms = performance.now() - started;
    const failed = (await rt.events({ contextId: root.id })).filter(
      (e) => e.type === "ToolFailed" || (e.type === "ParallelJobFinished" && e.data.status !== "success"),
    );
    if (r.status !== "completed" || failed.length > 0)
      throw new Error(`MCP run did not complete cleanly: ${r.status}, ${failed.length} failed calls`);
    return ms;
  };
  await timed("one"); // connects and lists the tools once
  let one = 0;
  let eight = 0;
  for (let i = 0; i < MCP_RUNS; i++) {
    one += await timed("one");
    eight += await timed("eight");
  }
  await rt.close();
  await store.close();
  return [
    { name: `run with one MCP tool call over stdio (${MCP_CALL_S * 1000} ms each)`, value: one / MCP_RUNS, unit: "ms" },
    {
      name: "run with 8 MCP tool calls as parallel jobs",
      value: eight / MCP_RUNS,
      unit: "ms",
      compareTo: "one call",
      ratio: eight / one,
      target: "≤ 1.5× one call",
    },
  ];
};

export async function run(): Promise<Row[]> {
  return [...(await streaming()), ...(await mcpParallel())];
}
