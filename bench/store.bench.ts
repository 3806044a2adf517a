// Event store figures: append rate beside raw INSERTs of the same rows and beside the store of the day the
// audit issue was filed, the free-space check's share of an append, the hash chain's own cost, verify's pace,
// and opening a 1M-event store.
import { randomUUID } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openPgliteStore } from "../src/events/pgliteStore.ts";
import type { EventStore } from "../src/events/store.ts";
import type { NewEvent } from "../src/events/schema.ts";
import { asRunId } from "../src/events/ids.ts";
import type { Row } from "./main.ts";
import { APPEND_SQL, encodeExpectedVersion } from "../src/events/appendSql.ts";
import { UNCHAINED_APPEND_FUNCTION, UNCHAINED_APPEND_SQL } from "./support/unchainedAppend.ts";
import { FILED_AT, loadFiledStore } from "./support/filedStore.ts";
import { diskReserve, freeBytes } from "../src/events/diskReserve.ts";

const quick = process.env.BENCH_QUICK === "1";
const APPEND_ROWS = quick ? 2_000 : 10_000; // events per measured block
const ROUNDS = 3; // raw and append blocks alternate, so drift hits both
const BIG_LOG = quick ? 100_000 : 1_000_000;
const OPENS = 3;
const VERIFY_LOG = quick ? 10_000 : 100_000;

const data = {
  runId: asRunId("run-1"),
  text: "Summarise the findings of the last three runs in two lines.",
  sender: "user" as const,
};
const metadata = { correlationId: "run-1", causationId: null, actor: "bench" };
const event = (): NewEvent => ({ type: "MessageReceived", data, metadata });

const INSERT_COLUMNS = "(event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)";

/** The same rows the store writes, as plain parameterised INSERTs with the versions computed here. */
const rawInsert = async (store: EventStore, streamId: string, fromVersion: number, count: number) => {
  const params: unknown[] = [];
  const tuples: string[] = [];
  for (let i = 0; i < count; i++) {
    const p = params.length;
    tuples.push(`($${p + 1}, $${p + 2}, $${p + 3}, 'MessageReceived', 1, $${p + 4}, $${p + 5}, $${p + 6})`);
    params.push(
      randomUUID(),
      streamId,
      fromVersion + i + 1,
      JSON.stringify(data),
      JSON.stringify(metadata),
      new Date().toISOString(),
    );
  }
  await store.sql.query(`INSERT INTO events ${INSERT_COLUMNS} VALUES ${tuples.join(", ")}`, params);
};

/** Events per second for `rows` events written `batch` at a time, across 50 streams that grow. */
const measure = async (
  write: (streamId: string, version: number, batch: number) => Promise<void>,
  prefix: string,
  rows: number,
  batch: number,
) => {
  const versions = new Map<string, number>();
  const started = performance.now();
  for (let i = 0; i < rows / batch; i++) {
    const streamId = `${prefix}-${i % 50}`;
    const version = versions.get(streamId) ?? 0;
    await write(streamId, version, batch);
    versions.set(streamId, version + batch);
  }
  return performance.now() - started;
};

const appendRates = async (store: EventStore, batch: number): Promise<Row[]> => {
  const append = async (streamId: string, version: number, n: number) => {
    await store.append(streamId, Array.from({ length: n }, event), {
      expectedVersion: version === 0 ? "no_stream" : version,
    });
  };
  const raw = (streamId: string, version: number, n: number) => rawInsert(store, streamId, version, n);
  // Warm both paths (plan caches, JIT) before timing.
  await measure(append, `warm-a${batch}`, 500, batch);
  await measure(raw, `warm-r${batch}`, 500, batch);
  let appendMs = 0;
  let rawMs = 0;
  for (let round = 0; round < ROUNDS; round++) {
    rawMs += await measure(raw, `raw${batch}-${round}`, APPEND_ROWS, batch);
    appendMs += await measure(append, `app${batch}-${round}`, APPEND_ROWS, batch);
  }
  const rawRate = (ROUNDS * APPEND_ROWS) / (rawMs / 1000);
  const appendRate = (ROUNDS * APPEND_ROWS) / (appendMs / 1000);
  const rawName = `raw INSERT, ${batch} row${batch > 1 ? "s" : ""}/statement`;
  return [
    { name: rawName, value: rawRate, unit: "events/s" },
    {
      name: `append, ${batch} event${batch > 1 ? "s" : ""}/append`,
      value: appendRate,
      unit: "events/s",
      compareTo: rawName,
      ratio: appendRate / rawRate,
      target: "ratio ≥ 0.7",
    },
  ];
};

/**
 * The hash chain's own cost: the append function as it is against the one before the chain, the same
 * SQL call with the same rows (no validation in JS around either), blocks alternating. Shown beside the
 * bar below, which is about the append rate users get.
 */
const chainCost = async (store: EventStore): Promise<Row[]> => {
  await store.sql.exec(UNCHAINED_APPEND_FUNCTION);
  const call = (sql: string) => async (streamId: string, version: number, n: number) => {
    const rows = Array.from({ length: n }, () => ({
      event_id: randomUUID(),
      type: "MessageReceived",
      schema_version: 1,
      data,
      metadata,
    }));
    await store.sql.query(sql, [
      streamId,
      encodeExpectedVersion(version === 0 ? "no_stream" : version),
      JSON.stringify(rows),
      new Date().toISOString(),
    ]);
  };
  const chained = call(APPEND_SQL);
  const unchained = call(UNCHAINED_APPEND_SQL);
  await measure(chained, "warm-c", 500, 1);
  await measure(unchained, "warm-u", 500, 1);
  let chainedMs = 0;
  let unchainedMs = 0;
  for (let round = 0; round < ROUNDS; round++) {
    unchainedMs += await measure(unchained, `unchained-${round}`, APPEND_ROWS, 1);
    chainedMs += await measure(chained, `chained-${round}`, APPEND_ROWS, 1);
  }
  const unchainedRate = (ROUNDS * APPEND_ROWS) / (unchainedMs / 1000);
  const chainedRate = (ROUNDS * APPEND_ROWS) / (chainedMs / 1000);
  const before = "append function without the hash chain (schema 1), 1 event/append";
  return [
    { name: before, value: unchainedRate, unit: "events/s" },
    {
      name: "append function with the hash chain, 1 event/append (the chain's own cost)",
      value: chainedRate,
      unit: "events/s",
      compareTo: before,
      ratio: chainedRate / unchainedRate,
    },
  ];
};

const FILED_BLOCK = 250; // appends per block; blocks alternate between the two stores
const FILED_BLOCKS = quick ? 16 : 80;

/**
 * The append rate users get, `store.append` of one event, against the store of the day the audit
 * issue was filed (before the hash chain), both in memory in this process, blocks alternating and the
 * figure the median of the per-block ratios (so a noisy moment hits one pair, not the result).
 */
const appendRateSinceFiled = async (): Promise<Row[]> => {
  const filed = await loadFiledStore();
  if ("unavailable" in filed) {
    console.error(`bench store: no comparison with the store at ${FILED_AT}: ${filed.unavailable}`);
    return [];
  }
  const stores = { then: await filed.open(), now: await openPgliteStore() };
  try {
    const versions = new Map<string, number>();
    const block = async (which: "then" | "now", prefix: string) => {
      const started = performance.now();
      for (let i = 0; i < FILED_BLOCK; i++) {
        const streamId = `${which}-${prefix}-${i % 50}`;
        const version = versions.get(streamId) ?? 0;
        await stores[which].append(streamId, [event()], { expectedVersion: version === 0 ? "no_stream" : version });
        versions.set(streamId, version + 1);
      }
      return performance.now() - started;
    };
    for (let i = 0; i < 4; i++) (await block("then", "warm"), await block("now", "warm"));
    const then: number[] = [];
    const now: number[] = [];
    for (let b = 0; b < FILED_BLOCKS; b++) {
      const order = b % 2 === 0 ? (["then", "now"] as const) : (["now", "then"] as const);
      for (const which of order) (which === "then" ? then : now).push(await block(which, `b${b % 5}`));
    }
    const ratios = now.map((ms, i) => then[i]! / ms).sort((a, b) => a - b);
    const rate = (blocks: number[]) => (blocks.length * FILED_BLOCK) / (blocks.reduce((x, y) => x + y, 0) / 1000);
    const thenName = `store.append at ${FILED_AT} (issue filed, no hash chain), 1 event/append`;
    return [
      { name: thenName, value: rate(then), unit: "events/s" },
      {
        name: "store.append now (hash chain), 1 event/append",
        value: rate(now),
        unit: "events/s",
        compareTo: thenName,
        ratio: ratios[ratios.length >> 1]!,
        target: "ratio ≥ 0.9 (median of block pairs)",
      },
    ];
  } finally {
    await Promise.all([stores.then.close(), stores.now.close()]);
    filed.dispose();
  }
};

/** verify-log's pace: the whole log read, every link recomputed and every row parsed in full. */
const verifyRate = async (store: EventStore): Promise<Row> => {
  const started = performance.now();
  const result = await store.verify();
  const ms = performance.now() - started;
  if (!result.ok) throw new Error(`the bench log does not verify: ${JSON.stringify(result.problems[0])}`);
  return {
    name: `verify a log of ${result.events.toLocaleString("en")} events`,
    value: result.events / (ms / 1000),
    unit: "events/s",
  };
};

/** Fills a log with `count` valid events straight in SQL: many streams of 100 events. */
const fillLog = async (store: EventStore, count: number) => {
  const chunk = 100_000;
  for (let from = 0; from < count; from += chunk) {
    await store.sql.query(
      `INSERT INTO events ${INSERT_COLUMNS}
       SELECT gen_random_uuid(), 'ctx-' || (g / 100), g % 100 + 1, 'MessageReceived', 1, $1::jsonb, $2::jsonb, now()
       FROM generate_series($3::int, $4::int) AS g`,
      [JSON.stringify(data), JSON.stringify(metadata), from, Math.min(from + chunk, count) - 1],
    );
  }
};

/**
 * Opens read-only: the big log is filled by INSERT … SELECT, with no hash chain, which an open for writing
 * rightly refuses as tampered (a log the product wrote opens for writing after checking only what came since
 * its last checked seal). Both the empty and the big store are opened the same way.
 */
const timeOpen = async (dataDir: string) => {
  const times: number[] = [];
  for (let i = 0; i < OPENS; i++) {
    const started = performance.now();
    const store = await openPgliteStore({ dataDir, readOnly: true });
    await store.headPosition();
    times.push(performance.now() - started);
    await store.close();
  }
  return times.sort((a, b) => a - b)[Math.floor(OPENS / 2)]!;
};

/**
 * The free-space check every append of a data dir store makes before PGlite sees it (diskReserve.ts), alone,
 * beside the append it guards: mostly a subtraction, a statfs at most every 1 MB of SQL or 250 ms.
 */
const reserveCheckCost = (dir: string, appendRows: Row[]): Row[] => {
  const CHECKS = quick ? 100_000 : 1_000_000;
  const STATFS = quick ? 10_000 : 100_000;
  const statementChars = 1200; // about one event's append statement
  const reserve = diskReserve(dir);
  for (let i = 0; i < 10_000; i++) reserve.check(statementChars);
  let started = performance.now();
  for (let i = 0; i < CHECKS; i++) reserve.check(statementChars);
  const checkNs = ((performance.now() - started) * 1e6) / CHECKS;
  started = performance.now();
  for (let i = 0; i < STATFS; i++) freeBytes(dir);
  const statfsNs = ((performance.now() - started) * 1e6) / STATFS;
  const appendName = "append, 1 event/append";
  const appendRate = appendRows.find((r) => r.name === appendName)!.value;
  const appendNs = 1e9 / appendRate;
  return [
    {
      name: "free-space check before an append (its share of the append above)",
      value: checkNs,
      unit: "ns",
      compareTo: appendName,
      ratio: checkNs / appendNs,
      target: "ratio ≤ 0.01",
    },
    { name: "one statfs of the data dir (the check's slow path)", value: statfsNs, unit: "ns" },
  ];
};

export async function run(): Promise<Row[]> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "actorzero-bench-store-"));
  try {
    const rows: Row[] = [];
    const store = await openPgliteStore({ dataDir: path.join(root, "append") });
    try {
      const single = await appendRates(store, 1);
      rows.push(...single, ...reserveCheckCost(path.join(root, "append"), single));
      rows.push(...(await appendRates(store, 10)));
      rows.push(...(await chainCost(store)));
    } finally {
      await store.close();
    }
    rows.push(...(await appendRateSinceFiled()));
    // A log of appends only (the one above holds raw INSERTs, which verify rightly reports as unchained).
    const chained = await openPgliteStore({ dataDir: path.join(root, "chained") });
    try {
      await measure(
        async (streamId, version, n) =>
          void (await chained.append(streamId, Array.from({ length: n }, event), {
            expectedVersion: version === 0 ? "no_stream" : version,
          })),
        "v",
        VERIFY_LOG,
        10,
      );
      rows.push(await verifyRate(chained));
    } finally {
      await chained.close();
    }

    const emptyDir = path.join(root, "empty");
    await (await openPgliteStore({ dataDir: emptyDir })).close();
    const bigDir = path.join(root, "big");
    const big = await openPgliteStore({ dataDir: bigDir });
    const fillStarted = performance.now();
    await fillLog(big, BIG_LOG);
    const fillMs = performance.now() - fillStarted;
    await big.close();

    const emptyMs = await timeOpen(emptyDir);
    const bigMs = await timeOpen(bigDir);
    const emptyName = "open an empty store read-only (median of 3)";
    rows.push(
      { name: `fill ${BIG_LOG.toLocaleString("en")} events by INSERT … SELECT`, value: fillMs / 1000, unit: "s" },
      { name: emptyName, value: emptyMs / 1000, unit: "s" },
      {
        name: `open a store of ${BIG_LOG.toLocaleString("en")} events read-only (median of 3)`,
        value: bigMs / 1000,
        unit: "s",
        compareTo: emptyName,
        ratio: bigMs / emptyMs,
        target: `≤ 1 s slower (is ${((bigMs - emptyMs) / 1000).toFixed(2)} s)`,
      },
    );
    return rows;
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
}
