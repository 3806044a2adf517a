// Projection figures: rebuilding every projection from a 100k-event log, beside a raw SELECT scan of the same rows.
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import type { ContextId, RunId } from "../src/events/ids.ts";
import type { NewEvent } from "../src/events/schema.ts";
import type { EventStore } from "../src/events/store.ts";
import { openProjections } from "../src/projections/engine.ts";
import type { Row } from "./main.ts";

const quick = process.env.BENCH_QUICK === "1";
const EVENTS = quick ? 10_000 : 100_000;
const PAGE = 1000;
const ROUNDS = quick ? 1 : 3; // raw and rebuild alternate, so drift hits both
const CONTEXTS = EVENTS / 100;

/** One run as the message loop records it: message, start, three tool steps, a final reply, completion (17 events). */
const runEvents = (runId: RunId, child: ContextId | null): NewEvent[] => {
  const out: NewEvent[] = [
    {
      type: "MessageReceived",
      data: { runId, text: "Find the three most cited papers on actor models and summarise them.", sender: "user" },
    },
    { type: "RunStarted", data: { runId, model: "gpt-4o-mini", superior: null } },
  ];
  for (let step = 0; step < 3; step++) {
    const toolCallId = `${runId}-call-${step}`;
    out.push(
      { type: "ModelCalled", data: { runId, step, attempt: 0, model: "gpt-4o-mini" } },
      {
        type: "ModelReplied",
        data: {
          runId,
          step,
          text: null,
          toolCalls: [
            {
              id: toolCallId,
              name: "call_subordinate",
              arguments: { message: `step ${step}: look up the citations`, reset: false },
            },
          ],
          usage: { inputTokens: 1200 + step * 300, outputTokens: 80 },
        },
      },
      {
        type: "ToolCalled",
        data: { runId, step, toolCallId, name: "call_subordinate", arguments: { message: `step ${step}` } },
      },
      {
        type: "ToolReturned",
        data: {
          runId,
          toolCallId,
          name: "call_subordinate",
          result: `{"context_id":"${child ?? "none"}","result":"Three papers: Hewitt 1973, Agha 1986, Armstrong 2003."}`,
        },
      },
    );
  }
  out.push(
    { type: "ModelCalled", data: { runId, step: 3, attempt: 0, model: "gpt-4o-mini" } },
    {
      type: "ModelReplied",
      data: {
        runId,
        step: 3,
        text: "Hewitt 1973, Agha 1986, Armstrong 2003.",
        toolCalls: [],
        usage: { inputTokens: 2400, outputTokens: 60 },
      },
    },
    { type: "RunCompleted", data: { runId, response: "Hewitt 1973, Agha 1986, Armstrong 2003." } },
  );
  return out;
};

/** Fills the log through `append`: contexts in trees of four (a root and three children), runs interleaved across contexts. */
const fill = async (store: EventStore) => {
  const ids = Array.from({ length: CONTEXTS }, (_, i) => `bench-ctx-${i}` as ContextId);
  const versions = new Map<string, number>();
  for (const [i, id] of ids.entries()) {
    const root = ids[i - (i % 4)]!;
    const isRoot = root === id;
    await store.append(
      id,
      [
        {
          type: "ContextCreated",
          data: {
            contextId: id,
            name: `ctx ${i}`,
            label: `ctx ${i}`,
            profile: "default",
            project: null,
            agentNumber: isRoot ? 0 : 1,
            depth: isRoot ? 0 : 1,
            kind: isRoot ? "root" : "subordinate",
            parentContextId: isRoot ? null : root,
            parentAgentNumber: isRoot ? null : 0,
            rootContextId: root,
            slot: isRoot ? null : "default",
            modelOverride: null,
          },
        },
      ],
      { expectedVersion: "no_stream" },
    );
    versions.set(id, 1);
  }
  let written = CONTEXTS;
  for (let r = 0; written < EVENTS; r++) {
    for (const [i, id] of ids.entries()) {
      if (written >= EVENTS) break;
      const events = runEvents(`run-${i}-${r}` as RunId, ids[i + 1] ?? null).slice(0, EVENTS - written);
      const v = versions.get(id)!;
      await store.append(id, events, { expectedVersion: v });
      versions.set(id, v + events.length);
      written += events.length;
    }
  }
};

/**
 * The same rows the engine reads, page by page, neither decoded nor folded: the driver's own parse of the
 * nine columns, the floor the rebuild bar is set against. The store reads a row as one JSON text instead (EVENT_ROW_JSON),
 * which is why its scan and the rebuild can beat this.
 */
const rawScan = async (store: EventStore) => {
  let after = 0;
  let n = 0;
  for (;;) {
    const { rows } = await store.sql.query<{ global_position: unknown }>(
      `SELECT global_position, event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at
       FROM events WHERE global_position > $1 ORDER BY global_position LIMIT $2`,
      [after, PAGE],
    );
    if (rows.length === 0) return n;
    n += rows.length;
    after = Number(rows[rows.length - 1]!.global_position);
  }
};

/** The store's own reader: the same rows as JSON texts, plus decoding (trusted rows: a cheap check of field kinds, no full zod parse). */
const decodedScan = async (store: EventStore) => {
  let n = 0;
  for await (const _ of store.iterateAll(0, PAGE)) n++;
  return n;
};

const time = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t = performance.now();
  const v = await f();
  return [v, performance.now() - t];
};

export async function run(): Promise<Row[]> {
  const store = await openPgliteStore();
  try {
    const [, fillMs] = await time(() => fill(store));
    const projections = await openProjections(store, undefined, { pageSize: PAGE, catchUp: false });
    // Warm both paths once.
    await rawScan(store);
    await projections.rebuild();
    let rawMs = 0;
    let decodedMs = 0;
    let rebuildMs = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const [n, ms] = await time(() => rawScan(store));
      if (n !== EVENTS) throw new Error(`raw scan read ${n} events, expected ${EVENTS}`);
      rawMs += ms;
      decodedMs += (await time(() => decodedScan(store)))[1];
      const [head, rms] = await time(() => projections.rebuild());
      if (head !== EVENTS) throw new Error(`rebuild reached ${head}, expected ${EVENTS}`);
      rebuildMs += rms;
    }
    const rate = (ms: number) => (ROUNDS * EVENTS) / (ms / 1000);
    const rawName = `raw SELECT scan of ${EVENTS / 1000}k events`;
    const rows: Row[] = [
      {
        name: `fill: append ${EVENTS / 1000}k events (one run per append)`,
        value: EVENTS / (fillMs / 1000),
        unit: "events/s",
      },
      { name: rawName, value: rate(rawMs), unit: "events/s" },
      {
        name: "store.iterateAll (scan + decode)",
        value: rate(decodedMs),
        unit: "events/s",
        compareTo: rawName,
        ratio: rawMs / decodedMs,
      },
      {
        name: `rebuild all ${5} projections from zero`,
        value: rate(rebuildMs),
        unit: "events/s",
        compareTo: rawName,
        ratio: rawMs / rebuildMs,
        target: "ratio ≥ 0.7",
      },
    ];
    await projections.drop();
    return rows;
  } finally {
    await store.close();
  }
}
