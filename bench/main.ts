// Runs the benchmark modules and prints a table and one JSON line: `npm run bench [-- <module>…]`.
// BENCH_QUICK=1 shrinks every module's sizes (for a smoke run).
//
// Each module runs in a process of its own (this file again, with `--only <module>`), so no module is
// measured in a heap another one left behind (the store module's million-event log, for one: the runtime
// step read 1.52–1.77× after it in one process, 1.50× and 1.55× in runs of its module alone).
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { BenchSkipped } from "./support/skip.ts";

/** One measured figure; `ratio` compares `value` to the row named `compareTo`, `target` says what passes. */
export type Row = { name: string; value: number; unit: string; compareTo?: string; ratio?: number; target?: string };

/** Each module exports `run(): Promise<Row[]>`; add yours here. */
const MODULES: Record<string, () => Promise<{ run: () => Promise<Row[]> }>> = {
  store: () => import("./store.bench.ts"),
  projections: () => import("./projections.bench.ts"),
  postgres: () => import("./postgres.bench.ts"),
  runtime: () => import("./runtime.bench.ts"),
  delegation: () => import("./delegation.bench.ts"),
  cli: () => import("./cli.bench.ts"),
  footprint: () => import("./footprint.bench.ts"),
  peers: () => import("./peers.bench.ts"),
  serve: () => import("./serve.bench.ts"),
  web: () => import("./web.bench.ts"),
  ecosystem: () => import("./ecosystem.bench.ts"),
  windows: () => import("./windows.bench.ts"),
  capacity: () => import("./capacity.bench.ts"),
  limits: () => import("./limits.bench.ts"),
};

const quick = process.env.BENCH_QUICK === "1";

const format = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3));

/** Refuses names that are not modules, naming the ones there are. */
const checkKnown = (names: readonly string[]) => {
  const unknown = names.filter((n) => !(n in MODULES));
  if (unknown.length > 0)
    throw new Error(`unknown bench module(s): ${unknown.join(", ")}; known: ${Object.keys(MODULES).join(", ")}`);
};

/** The child's side: run one module and hand its rows to the parent (or print them, run by hand). */
const runOnly = async (name: string) => {
  checkKnown([name]);
  let message: ChildMessage;
  try {
    message = { rows: await (await MODULES[name]!()).run() };
  } catch (e) {
    if (!(e instanceof BenchSkipped)) throw e;
    message = { skipped: e.message };
  }
  const send = process.send?.bind(process);
  if (!send) return console.log(JSON.stringify({ module: name, ...message }));
  await new Promise<void>((resolve, reject) => send(message, (e: Error | null) => (e ? reject(e) : resolve())));
};

type ChildMessage = { rows: Row[] } | { skipped: string };

/** Runs one module in a fresh process (with the loader this one runs under); its rows, why it skipped, or its failure. */
const runInChild = (name: string) =>
  new Promise<ChildMessage>((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ["--only", name], {
      execArgv: process.execArgv,
      stdio: ["inherit", "inherit", "inherit", "ipc"],
    });
    let answer: ChildMessage | undefined;
    child.on("message", (m: ChildMessage) => (answer = m));
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      answer && code === 0
        ? resolve(answer)
        : reject(new Error(`ended with ${signal ?? `exit code ${code}`}${answer ? "" : " before sending its rows"}`)),
    );
  });

const main = async () => {
  const wanted = process.argv.slice(2);
  checkKnown(wanted);
  const results: (Row & { module: string })[] = [];
  // A module that cannot run here, or fails, is named with why; the others still run and the table still prints.
  const notRun: { module: string; skipped?: string; failed?: string }[] = [];
  for (const name of Object.keys(MODULES)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    const started = performance.now();
    try {
      const answer = await runInChild(name);
      if ("skipped" in answer) {
        console.error(`bench ${name}: skipped: ${answer.skipped}`);
        notRun.push({ module: name, skipped: answer.skipped });
        continue;
      }
      console.error(`bench ${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
      results.push(...answer.rows.map((r) => ({ module: name, ...r })));
    } catch (e) {
      console.error(`bench ${name}: failed: ${(e as Error).message}`);
      notRun.push({ module: name, failed: (e as Error).message });
    }
  }
  const table = results.map((r) => ({
    module: r.module,
    name: r.name,
    value: `${format(r.value)} ${r.unit}`,
    ratio: r.ratio === undefined ? "" : `${r.ratio.toFixed(2)} vs ${r.compareTo}`,
    target: r.target ?? "",
  }));
  console.table(table);
  for (const m of notRun)
    console.log(`${m.module}: ${m.skipped !== undefined ? `skipped (${m.skipped})` : `failed (${m.failed})`}`);
  console.log(
    JSON.stringify({ bench: "actorzero", quick, node: process.version, at: new Date().toISOString(), results, notRun }),
  );
  // Skipping for a missing prerequisite is said and is no failure; a module that broke fails the run.
  if (notRun.some((m) => m.failed !== undefined)) process.exitCode = 1;
};

const only = process.argv[2] === "--only" ? process.argv[3] : undefined;
if (only !== undefined) await runOnly(only);
else await main();
