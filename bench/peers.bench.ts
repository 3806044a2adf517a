// Peer figures: what users compare across agent runtimes, each beside the raw floor of the same workload in the same run.
//
// - A fresh delegation: a new root (createContext) is sent a message, calls `call_subordinate`, the
//   child answers, the root answers: 3 calls to a zero-latency model.
// - A long conversation: LONG delegations on one root; growth is the median time of the last three
//   batches over that of the first three.
// - The raw floor: the same workload as 15 events in 6 one-statement appends (an INSERT … SELECT that
//   checks the stream version), written by hand to a copy of the events table (same columns, indexes
//   and insert trigger) in the same in-memory PGlite, so neither side pays for the other's rows.
// Rounds alternate runtime and raw, and each figure is the median round, so drift hits both alike.
import { randomUUID } from "node:crypto";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import type { EventStore } from "../src/events/store.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import type { ModelPort, ModelRequest, ModelTurn } from "../src/models/port.ts";
import type { Row } from "./main.ts";
import { recordingStore } from "./support/recordingStore.ts";

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = quick ? 3 : 8;
const PER_ROUND = quick ? 10 : 25;
const LONG = quick ? 40 : 220;
const BATCH = quick ? 10 : 20;
const GROWTH_BATCHES = 3; // growth compares the median of the last three batches with that of the first three

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** A zero-latency model that keeps nothing (the scripted model records every request, which a long conversation would pay for). */
const delegatingModel = (): ModelPort => ({
  call: async (req: ModelRequest): Promise<ModelTurn> => {
    if (req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool") {
      return { toolCalls: [{ id: `d-${randomUUID().slice(0, 8)}`, name: "call_subordinate", arguments: JSON.stringify({ message: "look it up", reset: true }) }] };
    }
    return { text: req.agentNumber === 0 ? "composed" : "found it", usage: { inputTokens: 12, outputTokens: 3 } };
  },
});

// ---- the raw floor ------------------------------------------------------------------------------

const RAW_TABLE = "peers_raw_events";

/** The events table's columns, keys and indexes (it has had no INSERT trigger since schema 5, so neither has this). */
const createRawTable = async (store: EventStore) => {
  await store.sql.exec(`CREATE TABLE ${RAW_TABLE} (LIKE events INCLUDING ALL);`);
};

/** One append, one statement: the version check and the insert together; nothing is inserted when the version moved. */
const RAW_APPEND = `
  INSERT INTO ${RAW_TABLE} (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
  SELECT x.event_id, $1, v.cur + x.ord::int, x.type, 1, x.data, x.metadata, now()
  FROM (SELECT coalesce(max(stream_version), 0) AS cur FROM ${RAW_TABLE} WHERE stream_id = $1) v,
       ROWS FROM (jsonb_to_recordset($3::jsonb) AS (event_id uuid, type text, data jsonb, metadata jsonb)) WITH ORDINALITY AS x(event_id, type, data, metadata, ord)
  WHERE v.cur = $2
  RETURNING global_position`;

type RawEvent = { type: string; data: Record<string, unknown> };

/** The floor of one delegation: 15 events in 6 appends, the data as the runtime records it. */
const floorAppends = (rootId: string, childId: string): { stream: string; events: RawEvent[] }[] => {
  const runId = randomUUID();
  const childRun = randomUUID();
  const created = (id: string, child: boolean): RawEvent => ({
    type: "ContextCreated",
    data: {
      contextId: id, name: child ? "look it up" : "root", label: child ? "look it up" : "root", profile: "default", project: null,
      agentNumber: child ? 1 : 0, depth: child ? 1 : 0, kind: child ? "subordinate" : "root",
      parentContextId: child ? rootId : null, parentAgentNumber: child ? 0 : null, rootContextId: rootId, slot: child ? "default" : null, modelOverride: null,
    },
  });
  const call = { id: "d1", name: "call_subordinate", arguments: '{"message":"look it up","reset":true}' };
  return [
    { stream: rootId, events: [created(rootId, false)] },
    {
      stream: rootId,
      events: [
        { type: "MessageReceived", data: { runId, text: "delegate once", sender: "user" } },
        { type: "RunStarted", data: { runId, model: "gpt-4o-mini", superior: null } },
        { type: "ModelCalled", data: { runId, step: 1, attempt: 1, model: "gpt-4o-mini" } },
      ],
    },
    {
      stream: rootId,
      events: [
        { type: "ModelReplied", data: { runId, step: 1, text: null, toolCalls: [call], usage: null } },
        { type: "SubordinateCalled", data: { runId, toolCallId: "d1", childContextId: childId, fresh: true, jobId: null } },
      ],
    },
    {
      stream: childId,
      events: [
        created(childId, true),
        { type: "MessageReceived", data: { runId: childRun, text: "look it up", sender: "superior" } },
        { type: "RunStarted", data: { runId: childRun, model: "gpt-4o-mini", superior: { contextId: rootId, runId, toolCallId: "d1", jobId: null } } },
        { type: "ModelCalled", data: { runId: childRun, step: 1, attempt: 1, model: "gpt-4o-mini" } },
      ],
    },
    {
      stream: childId,
      events: [
        { type: "ModelReplied", data: { runId: childRun, step: 1, text: "found it", toolCalls: [], usage: null } },
        { type: "RunCompleted", data: { runId: childRun, response: "found it" } },
      ],
    },
    {
      stream: rootId,
      events: [
        { type: "SubordinateReturned", data: { runId, toolCallId: "d1", childContextId: childId, outcome: "completed", result: "found it", reason: null } },
        { type: "ModelReplied", data: { runId, step: 2, text: "composed", toolCalls: [], usage: null } },
        { type: "RunCompleted", data: { runId, response: "composed" } },
      ],
    },
  ];
};

/** Writes one delegation's floor; `versions` carries each stream's version between delegations. */
const rawDelegation = async (store: EventStore, rootId: string, versions: Map<string, number>) => {
  for (const a of floorAppends(rootId, randomUUID())) {
    const at = versions.get(a.stream) ?? 0;
    const metadata = { correlationId: null, causationId: null, actor: null };
    const rows = a.events.map((e) => ({ event_id: randomUUID(), type: e.type, data: e.data, metadata }));
    const { rows: out } = await store.sql.query(RAW_APPEND, [a.stream, at, JSON.stringify(rows)]);
    if (out.length !== rows.length) throw new Error(`raw append to ${a.stream} at ${at} inserted ${out.length} of ${rows.length}`);
    versions.set(a.stream, at + rows.length);
  }
};

// ---- the measurements ---------------------------------------------------------------------------

const time = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

export async function run(): Promise<Row[]> {
  const base = await openPgliteStore();
  const store = recordingStore(base);
  try {
    await createRawTable(base);
    const rt = await createRuntime({ store, model: delegatingModel(), limits: { passivateAfterMs: 3_600_000 } });
    try {
      const fresh = async () => {
        const root = await rt.createContext({ name: "root" });
        const r = await rt.send(root.id, "delegate once");
        if (r.status !== "completed") throw new Error(`a fresh delegation ended ${r.status}`);
      };
      // Warm both paths (JIT, PGlite's caches), then alternate rounds.
      for (let i = 0; i < 5; i++) await fresh();
      for (let i = 0; i < 5; i++) await rawDelegation(base, randomUUID(), new Map());
      const rtRounds: number[] = [];
      const rawRounds: number[] = [];
      let appends = 0;
      let events = 0;
      for (let round = 0; round < ROUNDS; round++) {
        store.appends.length = 0;
        rtRounds.push((await time(async () => { for (let i = 0; i < PER_ROUND; i++) await fresh(); })) / PER_ROUND);
        appends = store.appends.length / PER_ROUND;
        events = store.appends.reduce((n, a) => n + a.events.length, 0) / PER_ROUND;
        rawRounds.push((await time(async () => { for (let i = 0; i < PER_ROUND; i++) await rawDelegation(base, randomUUID(), new Map()); })) / PER_ROUND);
      }
      const freshMs = median(rtRounds);
      const floorMs = median(rawRounds);

      // The long conversation: runtime and raw alternate batch by batch on one root each.
      const root = await rt.createContext({ name: "long" });
      const rawRoot = randomUUID();
      const rawVersions = new Map<string, number>();
      await rawDelegation(base, rawRoot, rawVersions); // the root's ContextCreated and a first delegation, like the runtime's root
      const rtBatches: number[] = [];
      const rawBatches: number[] = [];
      for (let done = 0; done < LONG; done += BATCH) {
        rtBatches.push(
          await time(async () => {
            for (let i = 0; i < BATCH; i++) {
              const r = await rt.send(root.id, `delegate ${done + i}`);
              if (r.status !== "completed") throw new Error(`delegation ${done + i} of the long conversation ended ${r.status}`);
            }
          }),
        );
        rawBatches.push(await time(async () => { for (let i = 0; i < BATCH; i++) await rawDelegation(base, rawRoot, rawVersions); }));
      }
      // The last three batches against the first three, each side its median: one batch alone (a
      // collection, a neighbour's burst) moved the raw floor's own "growth" between 0.85x and 1.21x.
      const growth = (b: number[]) => median(b.slice(-GROWTH_BATCHES)) / median(b.slice(0, GROWTH_BATCHES));
      const sum = (b: number[]) => b.reduce((x, y) => x + y, 0);
      const rawName = "raw floor: 15 events in 6 one-statement appends";
      return [
        { name: rawName, value: floorMs, unit: "ms/delegation" },
        {
          name: `fresh delegation (createContext + send, 3 model calls; ${events} events in ${appends} appends)`,
          value: freshMs,
          unit: "ms/delegation",
          compareTo: "raw floor",
          ratio: freshMs / floorMs,
          target: "≤ 2.0× raw floor (goal 1.3×)",
        },
        { name: `long conversation: ${LONG} delegations on one root, raw floor`, value: sum(rawBatches) / LONG, unit: "ms/delegation" },
        {
          name: `long conversation: ${LONG} delegations on one root`,
          value: sum(rtBatches) / LONG,
          unit: "ms/delegation",
          compareTo: "its raw floor",
          ratio: sum(rtBatches) / sum(rawBatches),
        },
        { name: `long conversation growth, raw floor (median of the last ${GROWTH_BATCHES} batches of ${BATCH} over the first ${GROWTH_BATCHES})`, value: growth(rawBatches), unit: "×" },
        { name: `long conversation growth (median of the last ${GROWTH_BATCHES} batches of ${BATCH} over the first ${GROWTH_BATCHES})`, value: growth(rtBatches), unit: "×", target: "≤ 1.1×" },
      ];
    } finally {
      await rt.close();
    }
  } finally {
    await base.close();
  }
}
