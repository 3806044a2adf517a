// Peer figures: what users compare across agent runtimes, each beside the true floor of the same writes in the same run.
//
// - A fresh delegation: a new root (createContext) is sent a message, calls `call_subordinate`, the
//   child answers, the root answers: 3 calls to a zero-latency model.
// - A long conversation: LONG delegations on one root; growth is the median time of the last three
//   batches over that of the first three.
// - The floor (support/appendFloor.ts): the events the runtime recorded in that round, appended again as
//   the product sends them (one `actorzero_append` statement per append, one simple-protocol message) to a
//   log of their own (a second in-memory PGlite; another database of the same PostgreSQL server), so
//   neither side pays for the other's rows: what any runtime must pay to record the same facts.
// Rounds alternate runtime and floor, and each figure is the median round, so drift hits both alike.
// On PGlite, and on a throwaway PostgreSQL cluster when its server binaries are here.
import { randomUUID } from "node:crypto";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import { openPostgresStore } from "../src/events/postgresStore.ts";
import type { EventStore } from "../src/events/store.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import type { ModelPort, ModelRequest, ModelTurn } from "../src/models/port.ts";
import type { Row } from "./main.ts";
import { type Floor, pgliteFloor, postgresFloor, prepareFloor, sendFloor } from "./support/appendFloor.ts";
import { PgClusterUnavailable, startPgCluster } from "./support/pgCluster.ts";
import { type RecordedAppend, recordingStore } from "./support/recordingStore.ts";

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = quick ? 3 : 8;
const PER_ROUND = quick ? 10 : 25;
const LONG = quick ? 40 : 220;
/** Shorter on PostgreSQL: its growth is the PGlite row's concern; the ratio is what is compared there. */
const PG_LONG = quick ? 40 : 100;
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
      return {
        toolCalls: [
          {
            id: `d-${randomUUID().slice(0, 8)}`,
            name: "call_subordinate",
            arguments: JSON.stringify({ message: "look it up", reset: true }),
          },
        ],
      };
    }
    return { text: req.agentNumber === 0 ? "composed" : "found it", usage: { inputTokens: 12, outputTokens: 3 } };
  },
});

// ---- the measurements ---------------------------------------------------------------------------

const time = async (f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

type Streams = Map<string, { id: string; version: number }>;

/** One store's rows: fresh delegations and a long conversation, each round against the floor of its own appends. */
const measure = async (
  label: string,
  base: EventStore,
  floor: Floor,
  sizes: { rounds: number; perRound: number; long: number; batch: number },
): Promise<Row[]> => {
  const store = recordingStore(base);
  const rt = await createRuntime({ store, model: delegatingModel(), limits: { passivateAfterMs: 3_600_000 } });
  try {
    const fresh = async () => {
      const root = await rt.createContext({ name: "root" });
      const r = await rt.send(root.id, "delegate once");
      if (r.status !== "completed") throw new Error(`a fresh delegation ended ${r.status}`);
    };
    /** Runs `work` recording its appends; its time, then the floor's time for the same appends. */
    const pair = async (
      work: () => Promise<void>,
      streams: Streams,
    ): Promise<{ ms: number; floorMs: number; appends: RecordedAppend[] }> => {
      store.appends.length = 0;
      const ms = await time(work);
      const appends = [...store.appends];
      const prepared = prepareFloor(appends, streams);
      return { ms, floorMs: await time(() => sendFloor(floor.send, prepared)), appends };
    };
    const freshRound = () =>
      pair(async () => {
        for (let i = 0; i < sizes.perRound; i++) await fresh();
      }, new Map());
    // Warm both paths (JIT, the databases' caches), then alternate rounds.
    await freshRound();
    const rounds = [];
    for (let round = 0; round < sizes.rounds; round++) rounds.push(await freshRound());
    const freshMs = median(rounds.map((r) => r.ms)) / sizes.perRound;
    const floorMs = median(rounds.map((r) => r.floorMs)) / sizes.perRound;
    const last = rounds.at(-1)!.appends;
    const appends = last.length / sizes.perRound;
    const events = last.reduce((n, a) => n + a.events.length, 0) / sizes.perRound;

    // The long conversation: runtime and floor alternate batch by batch, each on one root of its own.
    const streams: Streams = new Map();
    let root!: { id: string };
    await pair(async () => void (root = await rt.createContext({ name: "long" })), streams);
    const batches = [];
    for (let done = 0; done < sizes.long; done += sizes.batch) {
      batches.push(
        await pair(async () => {
          for (let i = 0; i < sizes.batch; i++) {
            const r = await rt.send(root.id, `delegate ${done + i}`);
            if (r.status !== "completed")
              throw new Error(`delegation ${done + i} of the long conversation ended ${r.status}`);
          }
        }, streams),
      );
    }
    // The last three batches against the first three, each side its median: one batch alone (a
    // collection, a neighbour's burst) moved the raw floor's own "growth" between 0.85x and 1.21x.
    const growth = (b: number[]) => median(b.slice(-GROWTH_BATCHES)) / median(b.slice(0, GROWTH_BATCHES));
    const sum = (b: number[]) => b.reduce((x, y) => x + y, 0);
    const rtBatches = batches.map((b) => b.ms);
    const floorBatches = batches.map((b) => b.floorMs);
    const floorName = `${label}floor: the same ${events} events in ${appends} appends, one statement each as the store sends them`;
    return [
      { name: floorName, value: floorMs, unit: "ms/delegation" },
      {
        name: `${label}fresh delegation (createContext + send, 3 model calls; ${events} events in ${appends} appends)`,
        value: freshMs,
        unit: "ms/delegation",
        compareTo: `${label}floor`,
        ratio: freshMs / floorMs,
        target: "≤ 2.0× floor (goal 1.3×)",
      },
      {
        name: `${label}long conversation: ${sizes.long} delegations on one root, floor`,
        value: sum(floorBatches) / sizes.long,
        unit: "ms/delegation",
      },
      {
        name: `${label}long conversation: ${sizes.long} delegations on one root`,
        value: sum(rtBatches) / sizes.long,
        unit: "ms/delegation",
        compareTo: "its floor",
        ratio: sum(rtBatches) / sum(floorBatches),
      },
      {
        name: `${label}long conversation growth, floor (median of the last ${GROWTH_BATCHES} batches of ${sizes.batch} over the first ${GROWTH_BATCHES})`,
        value: growth(floorBatches),
        unit: "×",
      },
      {
        name: `${label}long conversation growth (median of the last ${GROWTH_BATCHES} batches of ${sizes.batch} over the first ${GROWTH_BATCHES})`,
        value: growth(rtBatches),
        unit: "×",
        target: "≤ 1.1×",
      },
    ];
  } finally {
    await rt.close();
  }
};

export async function run(): Promise<Row[]> {
  const rows: Row[] = [];
  const base = await openPgliteStore();
  const floor = await pgliteFloor();
  try {
    rows.push(...(await measure("", base, floor, { rounds: ROUNDS, perRound: PER_ROUND, long: LONG, batch: BATCH })));
  } finally {
    await base.close();
    await floor.close();
  }
  let cluster;
  try {
    cluster = await startPgCluster();
  } catch (e) {
    if (!(e instanceof PgClusterUnavailable)) throw e;
    rows.push({ name: `PostgreSQL rows skipped: ${e.message}`, value: 0, unit: "" });
    return rows;
  }
  try {
    const pg = await openPostgresStore({ url: await cluster.createDatabase("peers") });
    const pgFloor = postgresFloor(await openPostgresStore({ url: await cluster.createDatabase("peers_floor") }));
    try {
      rows.push(
        ...(await measure("PostgreSQL: ", pg, pgFloor, {
          rounds: ROUNDS,
          perRound: PER_ROUND,
          long: PG_LONG,
          batch: BATCH,
        })),
      );
    } finally {
      await pg.close();
      await pgFloor.close();
    }
  } finally {
    await cluster.stop();
  }
  return rows;
}
