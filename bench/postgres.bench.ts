// PostgreSQL store figures: append and rebuild rates beside PGlite's in the same run, the total append rate of
// 1, 2 and 4 writer processes sharing one log, and the lease writes of a runtime's runs. Starts its own
// throwaway cluster (fsync off).
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { asRunId } from "../src/events/ids.ts";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { openPostgresStore } from "../src/events/postgresStore.ts";
import { openProjections } from "../src/projections/engine.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import type { ModelPort, ModelRequest, ModelTurn } from "../src/models/port.ts";
import type { NewEvent } from "../src/events/schema.ts";
import type { EventStore } from "../src/events/store.ts";
import type { Row } from "./main.ts";
import { startPgCluster } from "./support/pgCluster.ts";

const quick = process.env.BENCH_QUICK === "1";
const APPEND_ROWS = quick ? 1_000 : 5_000; // events per measured block
const ROUNDS = 3; // PGlite and PostgreSQL blocks alternate, so drift hits both
const WRITER_MS = quick ? 1_000 : 4_000;
const WRITERS = [1, 2, 4];
const DELEGATIONS = quick ? 10 : 50;

const event: NewEvent = {
  type: "MessageReceived",
  data: {
    runId: asRunId("run-1"),
    text: "Summarise the findings of the last three runs in two lines.",
    sender: "user",
  },
  metadata: { correlationId: "run-1", causationId: null, actor: "bench" },
};

/** Milliseconds to append `rows` events `batch` at a time, across 50 streams that grow. */
const timeAppends = async (store: EventStore, prefix: string, rows: number, batch: number) => {
  const versions = new Map<string, number>();
  const started = performance.now();
  for (let i = 0; i < rows / batch; i++) {
    const streamId = `${prefix}-${i % 50}`;
    const version = versions.get(streamId) ?? 0;
    await store.append(
      streamId,
      Array.from({ length: batch }, () => event),
      { expectedVersion: version === 0 ? "no_stream" : version },
    );
    versions.set(streamId, version + batch);
  }
  return performance.now() - started;
};

const appendRates = async (postgres: EventStore, pglite: EventStore, batch: number): Promise<Row[]> => {
  await timeAppends(postgres, `warm${batch}`, 500, batch);
  await timeAppends(pglite, `warm${batch}`, 500, batch);
  let pgMs = 0;
  let liteMs = 0;
  for (let round = 0; round < ROUNDS; round++) {
    liteMs += await timeAppends(pglite, `b${batch}-${round}`, APPEND_ROWS, batch);
    pgMs += await timeAppends(postgres, `b${batch}-${round}`, APPEND_ROWS, batch);
  }
  const unit = `${batch} event${batch > 1 ? "s" : ""}/append`;
  const liteName = `PGlite append, ${unit}`;
  const liteRate = (ROUNDS * APPEND_ROWS) / (liteMs / 1000);
  const pgRate = (ROUNDS * APPEND_ROWS) / (pgMs / 1000);
  return [
    { name: liteName, value: liteRate, unit: "events/s" },
    {
      name: `PostgreSQL append, ${unit}`,
      value: pgRate,
      unit: "events/s",
      compareTo: liteName,
      ratio: pgRate / liteRate,
    },
  ];
};

/** Rebuilding every projection from zero over the log each store now holds (the same appends on both). */
const rebuildRates = async (postgres: EventStore, pglite: EventStore): Promise<Row[]> => {
  const rate = async (store: EventStore) => {
    const projections = await openProjections(store, undefined, { catchUp: false });
    const events = await store.headPosition();
    const started = performance.now();
    await projections.rebuild();
    return events / ((performance.now() - started) / 1000);
  };
  const lite = await rate(pglite);
  const pg = await rate(postgres);
  const liteName = "PGlite rebuild of all projections";
  return [
    { name: liteName, value: lite, unit: "events/s" },
    {
      name: "PostgreSQL rebuild of all projections",
      value: pg,
      unit: "events/s",
      compareTo: liteName,
      ratio: pg / lite,
    },
  ];
};

/** `store` with its SQL door counting the statements that write the lease table (the runtime takes its leases through it). */
const countingLeaseWrites = (store: EventStore): { store: EventStore; writes: () => number } => {
  let writes = 0;
  const sql: EventStore["sql"] = {
    ...store.sql,
    query: (text, params) => {
      if (
        /^\s*(WITH[\s\S]*INSERT INTO context_leases|INSERT INTO context_leases|UPDATE context_leases|DELETE FROM context_leases)/.test(
          text,
        )
      )
        writes++;
      return store.sql.query(text, params);
    },
  };
  const wrapped = new Proxy(store, {
    get: (target, key) => {
      if (key === "sql") return sql;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: wrapped, writes: () => writes };
};

/** A zero-latency model for a delegation: the root calls call_subordinate once, then both answer. */
const delegatingModel: ModelPort = {
  call: async (req: ModelRequest): Promise<ModelTurn> =>
    req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool"
      ? {
          toolCalls: [
            {
              id: `d-${req.contextId.slice(0, 8)}`,
              name: "call_subordinate",
              arguments: JSON.stringify({ message: "look it up", reset: true }),
            },
          ],
        }
      : { text: req.agentNumber === 0 ? "composed" : "found it" },
};

/** Fresh delegations (a root run and its child's) by a runtime on PostgreSQL: lease writes per run, time per delegation. */
const runtimeOnPostgres = async (url: string): Promise<Row[]> => {
  const base = await openPostgresStore({ url });
  const { store, writes } = countingLeaseWrites(base);
  try {
    const rt = await createRuntime({ store, model: delegatingModel, limits: { passivateAfterMs: 3_600_000 } });
    try {
      const fresh = async () => {
        const root = await rt.createContext({ name: "root" });
        const r = await rt.send(root.id, "delegate once");
        if (r.status !== "completed") throw new Error(`a fresh delegation on PostgreSQL ended ${r.status}`);
      };
      for (let i = 0; i < 3; i++) await fresh();
      const before = writes();
      const started = performance.now();
      for (let i = 0; i < DELEGATIONS; i++) await fresh();
      const ms = (performance.now() - started) / DELEGATIONS;
      const runs = 2 * DELEGATIONS;
      return [
        { name: "PostgreSQL fresh delegation (createContext + send, 3 model calls)", value: ms, unit: "ms/delegation" },
        {
          name: `PostgreSQL lease writes per run (${runs} runs: ${DELEGATIONS} roots and their children)`,
          value: (writes() - before) / runs,
          unit: "writes/run",
          target: "≤ 1",
        },
      ];
    } finally {
      await rt.close();
    }
  } finally {
    await base.close();
  }
};

type Writer = { ready: Promise<void>; done: Promise<{ appended: number; durationMs: number }>; go: () => void };

const startWriter = (url: string, id: number): Writer => {
  const script = new URL("./support/pgWriter.ts", import.meta.url).pathname;
  const child = spawn(process.execPath, ["--import", "tsx", script, url, String(WRITER_MS), String(id)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  const done = new Promise<{ appended: number; durationMs: number }>((resolve, reject) => {
    lines.on("line", (line) => {
      if (line === "ready") readyResolve();
      else if (line.startsWith("{")) resolve(JSON.parse(line));
    });
    child.on("exit", (code) => (code === 0 ? undefined : reject(new Error(`writer ${id} exited with ${code}`))));
    child.on("error", reject);
  });
  return { ready, done, go: () => child.stdin!.end("go\n") };
};

/** Total events/s of `n` processes appending single events to streams of their own for WRITER_MS. */
const writerRate = async (url: string, n: number) => {
  const writers = Array.from({ length: n }, (_, i) => startWriter(url, i));
  await Promise.all(writers.map((w) => w.ready));
  for (const w of writers) w.go();
  const results = await Promise.all(writers.map((w) => w.done));
  return results.reduce((sum, r) => sum + r.appended / (r.durationMs / 1000), 0);
};

export async function run(): Promise<Row[]> {
  const cluster = await startPgCluster();
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "actorzero-bench-pg-"));
  try {
    const rows: Row[] = [];
    const postgres = await openPostgresStore({ url: await cluster.createDatabase("bench") });
    const pglite = await openPgliteStore({ dataDir: path.join(root, "pglite") });
    try {
      rows.push(...(await appendRates(postgres, pglite, 1)));
      rows.push(...(await appendRates(postgres, pglite, 10)));
      rows.push(...(await rebuildRates(postgres, pglite)));
    } finally {
      await postgres.close();
      await pglite.close();
    }
    rows.push(...(await runtimeOnPostgres(await cluster.createDatabase("bench_runtime"))));
    const oneName = "PostgreSQL, 1 writer process";
    let one = 0;
    for (const n of WRITERS) {
      const rate = await writerRate(await cluster.createDatabase("bench_writers"), n);
      if (n === 1) one = rate;
      const name = n === 1 ? oneName : `PostgreSQL, ${n} writer processes`;
      rows.push({ name, value: rate, unit: "events/s", ...(n === 1 ? {} : { compareTo: oneName, ratio: rate / one }) });
    }
    return rows;
  } finally {
    await cluster.stop();
    await fs.rm(root, { recursive: true, force: true });
  }
}
