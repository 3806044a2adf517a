// Many runtime processes on one PostgreSQL log (DESIGN §9): three workers drive 30 delegation trees at once, one is killed mid-run.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { openProjections } from "../../src/projections/engine.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { checkInvariants } from "../../src/testing/runtimeInvariants.ts";
import { logBuilder } from "../../src/testing/recorded.ts";
import { asContextId, asRunId } from "../../src/events/ids.ts";
import { eventually } from "../support/async.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { type Ack, byStream, checkClusterLog, parseAck } from "./clusterChecks.ts";
import { rootCreated } from "../support/rootCreated.ts";

const WORKERS = 3;
const ROOTS = 30;
const MESSAGES_PER_ROOT = 4;
const TTL_MS = 1000;
/** The victim is killed once this share of all jobs is done, at its next model call. */
const KILL_AFTER = 0.4;

type Job = { job: string; contextId: string; text: string };

type Worker = {
  name: string;
  child: ChildProcess;
  send(msg: unknown): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

/** The shared view of what the workers printed. */
class Board {
  readonly acks: Ack[] = [];
  readonly done = new Map<string, { status: string; by: string }>();
  readonly busy = new Map<string, number>();
  readonly failures: string[] = [];
  /** For each context, which workers called the model for it. */
  readonly drivenBy = new Map<string, Set<string>>();
  readonly ready = new Set<string>();
  readonly bye = new Set<string>();
  readonly modelCalls = new Map<string, number>();
  readonly dumps: string[] = [];

  read(by: string, line: string) {
    const ack = parseAck(by, line);
    if (ack) return void this.acks.push(ack);
    const [kind, a, b] = line.split(" ");
    if (kind === "model") {
      (this.drivenBy.get(a!) ?? this.drivenBy.set(a!, new Set()).get(a!)!).add(by);
      this.modelCalls.set(by, (this.modelCalls.get(by) ?? 0) + 1);
    } else if (kind === "done") this.done.set(a!, { status: b!, by });
    else if (kind === "busy") this.busy.set(by, (this.busy.get(by) ?? 0) + 1);
    else if (kind === "fail") this.failures.push(`${by}: ${line}`);
    else if (kind === "ready") this.ready.add(by);
    else if (kind === "bye") this.bye.add(by);
    else if (kind === "dump") this.dumps.push(`${by}: ${line}`);
  }
}

const startWorker = (name: string, url: string, board: Board): Worker => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL("./worker.ts", import.meta.url).pathname, url, name, String(TTL_MS)],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  createInterface({ input: child.stdout! }).on("line", (line) => board.read(name, line));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { name, child, exited, send: (msg) => child.stdin!.write(`${JSON.stringify(msg)}\n`) };
};

const until = (what: string, cond: () => boolean, timeoutMs: number) => eventually(cond, timeoutMs, what);

/** A small seeded PRNG (mulberry32), so the job order is the same on every run. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

/** Contexts with more runs started than ended: a run still open (one run at a time is checked apart). */
const RUN_ENDS = ["RunCompleted", "RunStopped", "RunFailed", "RunInterrupted"];
const OPEN_RUNS = `SELECT stream_id FROM events GROUP BY stream_id
  HAVING count(*) FILTER (WHERE type = 'RunStarted') > count(*) FILTER (WHERE type IN (${RUN_ENDS.map((t) => `'${t}'`).join(", ")}))`;

const log = (line: string) => console.log(`[cluster ${new Date().toISOString().slice(11, 23)}] ${line}`);

describeWithPostgres("many runtime processes on one PostgreSQL log", () => {
  const db = usePostgresDatabase("actorzero_cluster");

  describe("when three workers drive 30 delegation trees at once and one of them is killed mid-run", () => {
    it("loses no acknowledged event, never runs a context twice at once, lets the survivors take over, and its projections equal a rebuild", async () => {
      const t0 = Date.now();
      const url = db.url();
      const setupStore = await openPostgresStore({ url });
      const setup = await createRuntime({
        store: setupStore,
        model: scriptedModel(() => ({ text: "unused" })),
        owner: "setup",
      });
      const roots: string[] = [];
      for (let i = 0; i < ROOTS; i++) roots.push((await setup.createContext({ name: `root ${i}` })).id);
      await setup.close();
      await setupStore.close();

      const rand = seeded(20260101);
      const jobs: Job[] = [];
      for (let k = 0; k < MESSAGES_PER_ROOT; k++) {
        for (let i = 0; i < ROOTS; i++)
          jobs.push({ job: `r${i}m${k}`, contextId: roots[i]!, text: `root ${i} message #${k}` });
      }
      // Each job goes to a random worker, so sends to one root race between processes (busy, then retried).
      const share = new Map<string, Job[]>();
      const board = new Board();
      const workers = Array.from({ length: WORKERS }, (_, i) => startWorker(`w${i}`, url, board));
      const progress = setInterval(
        () =>
          log(
            `done ${board.done.size}/${jobs.length}, busy refusals ${[...board.busy.values()].reduce((a, b) => a + b, 0)}, acks ${board.acks.length}`,
          ),
        2000,
      );
      try {
        await until("the workers to open", () => board.ready.size === WORKERS, 60_000);
        log(`${WORKERS} workers ready after ${Date.now() - t0} ms; ${jobs.length} jobs over ${ROOTS} roots`);
        for (const job of jobs) {
          const w = workers[Math.floor(rand() * WORKERS)]!;
          (share.get(w.name) ?? share.set(w.name, []).get(w.name)!).push(job);
          w.send({ op: "send", ...job });
        }

        // Kill the victim mid-run: at a model call, i.e. between RunStarted and the run's end.
        const victim = workers[WORKERS - 1]!;
        await until(
          `${Math.ceil(jobs.length * KILL_AFTER)} jobs done`,
          () => board.done.size >= jobs.length * KILL_AFTER,
          60_000,
        );
        const callsBefore = board.modelCalls.get(victim.name) ?? 0;
        await until(
          `a model call of ${victim.name}`,
          () => (board.modelCalls.get(victim.name) ?? 0) > callsBefore,
          30_000,
        );
        victim.child.kill("SIGKILL");
        const killedAt = Date.now();
        expect((await victim.exited).signal).toBe("SIGKILL");
        const orphaned = share.get(victim.name)!.filter((j) => !board.done.has(j.job));
        log(
          `killed ${victim.name} with ${board.done.size}/${jobs.length} done; handing its ${orphaned.length} unfinished jobs to the survivors`,
        );
        expect(orphaned.length).toBeGreaterThan(0);
        const survivors = workers.slice(0, -1);
        orphaned.forEach((job, i) => survivors[i % survivors.length]!.send({ op: "send", ...job }));

        const diagnose = async (stuck: Job[]) => {
          // Each worker's dump ends with its "in-flight" line: wait for one more from every survivor.
          const dumped = () => board.dumps.filter((l) => l.includes("dump in-flight")).length;
          const before = dumped();
          for (const w of survivors) w.send({ op: "dump" });
          await until("the survivors' dumps", () => dumped() >= before + survivors.length, 5_000).catch(
            () => undefined,
          );
          const store = await openPostgresStore({ url });
          const lines = [...board.dumps, ...board.failures];
          for (const j of stuck) {
            lines.push(`stuck ${j.job} ${j.contextId}`);
            const { rows } = await store.sql.query<{ stream_id: string; tail: string }>(
              `SELECT stream_id, string_agg(type || '@' || global_position || '/v' || stream_version, ' ' ORDER BY stream_version) AS tail FROM events
               WHERE stream_id = $1 OR stream_id IN (SELECT stream_id FROM events WHERE type = 'ContextCreated' AND data->>'rootContextId' = $1)
               GROUP BY stream_id`,
              [j.contextId],
            );
            for (const r of rows) lines.push(`  ${r.stream_id}: ${r.tail}`);
          }
          const { rows: leases } = await store.sql.query(
            `SELECT context_id, owner, expires_at > now() AS live FROM context_leases`,
          );
          lines.push(`leases ${JSON.stringify(leases)}`);
          await store.close();
          log(lines.join("\n"));
        };
        await until("every job done", () => board.done.size === jobs.length || board.failures.length > 0, 60_000).catch(
          async (e: Error) => {
            await diagnose(jobs.filter((j) => !board.done.has(j.job)));
            throw e;
          },
        );
        if (board.failures.length > 0) {
          await diagnose(jobs.filter((j) => board.failures.some((f) => f.includes(` ${j.job} `))));
        }
        expect(board.failures).toEqual([]);

        // A dead run no job came back to (a child its interrupted parent had called, say) is the survivors'
        // sweepers' to close: within a lease's expiry plus one sweep interval of the kill (TTL_MS each),
        // not when the last job is done. So wait for the log to come to rest while the survivors live,
        // checking again at each run end appended; without their sweepers it never does, and the deadline fails the test.
        const probe = await openPostgresStore({ url });
        const openRuns = async () =>
          (await probe.sql.query<{ stream_id: string }>(OPEN_RUNS)).rows.map((r) => r.stream_id);
        let open: string[];
        try {
          const head = await probe.headPosition();
          open = await new Promise<string[]>((resolve, reject) => {
            let settled = false;
            let unsubscribe = () => {};
            const deadline = setTimeout(
              () => void openRuns().then(settle, reject),
              killedAt + 2 * TTL_MS + 20_000 - Date.now(),
            );
            const settle = (ids: string[]) => {
              if (settled) return;
              settled = true;
              clearTimeout(deadline);
              unsubscribe();
              resolve(ids);
            };
            const check = () => openRuns().then((ids) => ids.length === 0 && settle(ids), reject);
            unsubscribe = probe.subscribe(head, (e) => void (RUN_ENDS.includes(e.type) && check()));
            void check();
          });
        } finally {
          await probe.close();
        }
        expect(open, "contexts whose runs the survivors never closed").toEqual([]);
        log(`the log came to rest ${Date.now() - killedAt} ms after the kill`);
        for (const w of survivors) w.send({ op: "quit" });
        for (const w of survivors) expect(await w.exited).toMatchObject({ code: 0 });
        log(`all ${jobs.length} jobs done after ${Date.now() - t0} ms; checking the log`);

        // The runs the survivors ended all completed; only the victim's runs may have been cut short.
        expect([...board.done.values()].filter((d) => d.status !== "completed")).toEqual([]);
        expect(
          [...board.busy.values()].reduce((a, b) => a + b, 0),
          "no send was ever refused as busy",
        ).toBeGreaterThan(0);

        const store = await openPostgresStore({ url });
        try {
          const events: RecordedEvent[] = [];
          for await (const e of store.iterateAll(0)) events.push(e);
          expect(checkClusterLog(events, board.acks)).toEqual([]);
          expect(board.acks.some((a) => a.by === victim.name)).toBe(true);

          // The victim's open runs (and only they) were interrupted, once its lease had expired.
          const streams = byStream(events);
          const rootOf = (id: string) => (streams.get(id)![0]!.data as { rootContextId: string }).rootContextId;
          const victimsRoots = new Set(orphaned.map((j) => j.contextId));
          const interrupted = events.filter((e) => e.type === "RunInterrupted");
          expect(interrupted.length).toBeGreaterThan(0);
          for (const e of interrupted) {
            expect(
              victimsRoots.has(rootOf(e.streamId)),
              `${e.streamId} was interrupted, but it is not in a tree ${victim.name} left unfinished`,
            ).toBe(true);
            expect(Date.parse(e.recordedAt) - killedAt).toBeGreaterThan(TTL_MS / 3);
          }
          log(
            `${interrupted.length} run(s) interrupted, ${Math.min(...interrupted.map((e) => Date.parse(e.recordedAt) - killedAt))}–${Math.max(...interrupted.map((e) => Date.parse(e.recordedAt) - killedAt))} ms after the kill`,
          );

          // Every root ran each of its messages, and children were driven by more than one process over time.
          for (const id of roots) {
            const texts = streams
              .get(id)!
              .filter((e) => e.type === "MessageReceived")
              .map((e) => (e.data as { text: string }).text);
            for (let k = 0; k < MESSAGES_PER_ROOT; k++)
              expect(texts).toContain(`root ${roots.indexOf(id)} message #${k}`);
          }
          const children = [...streams.keys()].filter((id) => !roots.includes(id));
          const crossProcess = children.filter((id) => (board.drivenBy.get(id)?.size ?? 0) > 1);
          log(
            `${events.length} events, ${children.length} children, ${crossProcess.length} driven by more than one process`,
          );
          expect(crossProcess.length).toBeGreaterThan(0);

          // The projections the workers kept, side by side with a rebuild from zero.
          const projections = await openProjections(store);
          const verified = await projections.verify();
          expect(verified.position).toBe(events.at(-1)!.globalPosition);
          const mismatches = verified.mismatches.map(
            (m) =>
              `${m.projection}/${m.key}: stored at position ${m.stored?.position ?? "-"}, rebuilt at ${m.rebuilt?.position ?? "-"}`,
          );
          expect(mismatches).toEqual([]);

          // And every lifecycle invariant of actorzero/testing, over the whole log and those projections.
          const checker = await createRuntime({
            store,
            model: scriptedModel(() => ({ text: "unused" })),
            owner: "checker",
            recovery: "interrupt",
          });
          expect((await checkInvariants(checker, { rebuild: "none" })).slice(0, 5)).toEqual([]);
          await checker.close();
        } finally {
          await store.close();
        }
        log(`checked in ${Date.now() - t0} ms overall`);
      } finally {
        clearInterval(progress);
        for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
      }
    }, 150_000);
  });
});

describe("the checks of a log written by many processes", () => {
  const ctx = asContextId("00000000-0000-4000-8000-0000000000c1");
  const created = rootCreated(ctx);
  const run1 = asRunId("00000000-0000-4000-8000-0000000000a1");
  const run2 = asRunId("00000000-0000-4000-8000-0000000000a2");
  const started = (runId: typeof run1) =>
    ({ type: "RunStarted", data: { runId, model: "m", superior: null } }) as const;
  const message = (runId: typeof run1) =>
    ({ type: "MessageReceived", data: { runId, text: "hi", sender: "user" } }) as const;

  it("finds two runs of one context open at once", () => {
    const log = logBuilder();
    log.add(ctx, created);
    log.add(ctx, message(run1));
    log.add(ctx, started(run1));
    log.add(ctx, message(run2));
    log.add(ctx, started(run2));
    log.add(ctx, { type: "RunCompleted", data: { runId: run1, response: "a" } });
    log.add(ctx, { type: "RunCompleted", data: { runId: run2, response: "b" } });
    expect(checkClusterLog(log.events, []).join("\n")).toMatch(/one-run-at-a-time.*while run .*a1 is still running/);
  });

  it("finds a run left open, a gap in stream versions, and an acknowledged event missing from the log", () => {
    const log = logBuilder();
    log.add(ctx, created);
    log.add(ctx, message(run1));
    log.add(ctx, started(run1));
    const withGap = log.events.map((e, i) => (i === 2 ? { ...e, streamVersion: 4 } : e));
    const problems = checkClusterLog(withGap, [{ by: "w9", position: 99, streamId: ctx, type: "RunCompleted" }]).join(
      "\n",
    );
    expect(problems).toMatch(/run-left-open/);
    expect(problems).toMatch(/log-shape.*versions must be 1..n/);
    expect(problems).toMatch(/ack-lost.*w9 acknowledged position 99/);
  });
});
