// Where a fresh delegation's time goes: the capacity bench's load (capacityLoad.ts runLoad), measured from outside.
//
//   npx tsx bench/support/delegationProbe.ts <at once> <delegations> [latencyMs] [--pglite] [--statements] [--server-statements] [--profile FILE]
//
// - <at once>: conversations at once (1: one delegation at a time); latencyMs: the model's (default 0).
// - Prints per delegation: wall time, this process's CPU (process.cpuUsage: user and system, far less
//   noisy than wall time on a shared machine), the messages sent to the database (counted at the driver,
//   so a group of appends is one), and on PostgreSQL the server's CPU (its processes' /proc times).
// - --statements: the messages by statement; --server-statements: the server's own split from
//   pg_stat_statements (nested statements included, planning timed); --profile: a V8 CPU profile of
//   the measured window only (open it in Chrome's devtools).
// - --url URL: an existing PostgreSQL database instead of a throwaway cluster (no server CPU then), so
//   that two probes started together measure two processes on one log.
// - A warm-up of 20 delegations comes first and is not counted. Nothing here changes the product: the
//   counting wraps the driver's client in this process only.
import fs from "node:fs";
import { Session } from "node:inspector/promises";
import pg from "pg";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import { runLoad } from "./capacityLoad.ts";
import { startPgCluster } from "./pgCluster.ts";

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const valueOf = (name: string) => (flag(name) ? args[args.indexOf(name) + 1] : undefined);
const [atOnce, delegations, latency] = args.filter(
  (a, i) => !a.startsWith("--") && args[i - 1] !== "--profile" && args[i - 1] !== "--url",
);
const profileFile = valueOf("--profile");
const givenUrl = valueOf("--url");
if (!atOnce || !delegations)
  throw new Error("usage: delegationProbe.ts <at once> <delegations> [latencyMs] [--pglite] [--statements] ...");
const conversations = Number(atOnce);
const rounds = Math.ceil(Number(delegations) / conversations);
const latencyMs = Number(latency ?? 0);

// Every message the driver sends, by statement (a group of appends by its size).
const sent = new Map<string, number>();
const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown }).query = function (
  this: unknown,
  ...a: unknown[]
) {
  const text = typeof a[0] === "string" ? a[0] : ((a[0] as { text?: string } | undefined)?.text ?? "?");
  const appends = text.split("SELECT actorzero_append(E'").length - 1;
  const key = appends > 0 ? `${appends} append(s) in one message` : text.replace(/\s+/g, " ").trim().slice(0, 70);
  sent.set(key, (sent.get(key) ?? 0) + 1);
  return query.apply(this, a);
};

/** CPU milliseconds of the server's processes (the postmaster and its children) so far. */
const serverCpuMs = (dataDir: string): number => {
  const postmaster = Number(fs.readFileSync(`${dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
  let ticks = 0;
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pid) === postmaster || Number(fields[1]) === postmaster)
        ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
};

const serverStatements = flag("--server-statements");
const cluster =
  flag("--pglite") || givenUrl
    ? undefined
    : await startPgCluster(
        serverStatements
          ? {
              settings: {
                shared_preload_libraries: "pg_stat_statements",
                "pg_stat_statements.track": "all",
                "pg_stat_statements.track_planning": "on",
              },
            }
          : {},
      );
try {
  const url = givenUrl ?? (await cluster?.createDatabase("probe"));
  const store = url ? await openPostgresStore({ url }) : await openPgliteStore();
  try {
    await runLoad(store, 4, 5, 0);
    if (serverStatements) {
      await store.sql.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      await store.sql.exec("SELECT pg_stat_statements_reset()");
    }
    sent.clear();
    const session = new Session();
    if (profileFile) {
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.start");
    }
    const server0 = cluster ? serverCpuMs(cluster.dataDir) : 0;
    const cpu0 = process.cpuUsage();
    const result = await runLoad(store, conversations, rounds, latencyMs);
    const cpu = process.cpuUsage(cpu0);
    const serverMs = cluster ? serverCpuMs(cluster.dataDir) - server0 : Number.NaN;
    if (profileFile) fs.writeFileSync(profileFile, JSON.stringify((await session.post("Profiler.stop")).profile));
    const n = result.delegations;
    const messages = [...sent.values()].reduce((s, v) => s + v, 0);
    const each = (x: number) => (x / n).toFixed(2);
    console.log(
      `${conversations} at once, model ${latencyMs} ms, ${n} delegations: ${(n / (result.wallMs / 1000)).toFixed(1)}/s; ` +
        `per delegation: wall ${each(result.wallMs)} ms, CPU ${each((cpu.user + cpu.system) / 1000)} ms ` +
        `(system ${each(cpu.system / 1000)}), messages ${each(messages)}, server CPU ${each(serverMs)} ms`,
    );
    if (flag("--statements"))
      for (const [k, v] of [...sent].sort((a, b) => b[1] - a[1])) console.log(`  ${each(v)}  ${k}`);
    if (serverStatements) {
      const { rows } = await store.sql.query<{ calls: number; exec: number; plan: number; q: string }>(
        `SELECT calls, total_exec_time AS exec, total_plan_time AS plan, regexp_replace(query, '\\s+', ' ', 'g') AS q
           FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 15`,
      );
      for (const r of rows)
        console.log(
          `  ${each(r.exec)} ms run, ${each(r.plan)} ms planned, ${each(r.calls)} calls  ${r.q.slice(0, 90)}`,
        );
    }
  } finally {
    await store.close();
  }
} finally {
  await cluster?.stop();
}
