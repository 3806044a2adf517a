// Runs the benchmark modules and prints a table and one JSON line: `npm run bench [-- <module>…]`.
// BENCH_QUICK=1 shrinks every module's sizes (for a smoke run).
//
// Each module runs in a process of its own (this file again, with `--only <module>`), so no module is
// measured in a heap another one left behind (the store module's million-event log, for one: the runtime
// step read 1.52–1.77× after it in one process, 1.50× and 1.55× in runs of its module alone).
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

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
};

const quick = process.env.BENCH_QUICK === "1";

const format = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3));

/** Refuses names that are not modules, naming the ones there are. */
const checkKnown = (names: readonly string[]) => {
  const unknown = names.filter((n) => !(n in MODULES));
  if (unknown.length > 0) throw new Error(`unknown bench module(s): ${unknown.join(", ")}; known: ${Object.keys(MODULES).join(", ")}`);
};

/** The child's side: run one module and hand its rows to the parent (or print them, run by hand). */
const runOnly = async (name: string) => {
  checkKnown([name]);
  const rows = await (await MODULES[name]!()).run();
  const send = process.send?.bind(process);
  if (!send) return console.log(JSON.stringify({ module: name, rows }));
  await new Promise<void>((resolve, reject) => send({ rows }, (e: Error | null) => (e ? reject(e) : resolve())));
};

/** Runs one module in a fresh process (with the loader this one runs under); its rows, or its failure. */
const runInChild = (name: string) =>
  new Promise<Row[]>((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ["--only", name], { execArgv: process.execArgv, stdio: ["inherit", "inherit", "inherit", "ipc"] });
    let rows: Row[] | undefined;
    child.on("message", (m: { rows: Row[] }) => (rows = m.rows));
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      rows && code === 0 ? resolve(rows) : reject(new Error(`bench ${name} ended with ${signal ?? `exit code ${code}`}${rows ? "" : " before sending its rows"}`)),
    );
  });

const main = async () => {
  const wanted = process.argv.slice(2);
  checkKnown(wanted);
  const results: (Row & { module: string })[] = [];
  for (const name of Object.keys(MODULES)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    const started = performance.now();
    const rows = await runInChild(name);
    console.error(`bench ${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
    results.push(...rows.map((r) => ({ module: name, ...r })));
  }
  const table = results.map((r) => ({
    module: r.module,
    name: r.name,
    value: `${format(r.value)} ${r.unit}`,
    ratio: r.ratio === undefined ? "" : `${r.ratio.toFixed(2)} vs ${r.compareTo}`,
    target: r.target ?? "",
  }));
  console.table(table);
  console.log(JSON.stringify({ bench: "actorzero", quick, node: process.version, at: new Date().toISOString(), results }));
};

const only = process.argv[2] === "--only" ? process.argv[3] : undefined;
if (only !== undefined) await runOnly(only);
else await main();
