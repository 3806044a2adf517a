// Runs the benchmark modules and prints a table and one JSON line: `npm run bench [-- <module>…]`.
// BENCH_QUICK=1 shrinks every module's sizes (for a smoke run).

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
};

const quick = process.env.BENCH_QUICK === "1";

const format = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3));

const main = async () => {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !(w in MODULES));
  if (unknown.length > 0) throw new Error(`unknown bench module(s): ${unknown.join(", ")}; known: ${Object.keys(MODULES).join(", ")}`);
  const results: (Row & { module: string })[] = [];
  for (const [name, load] of Object.entries(MODULES)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    const started = performance.now();
    const rows = await (await load()).run();
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

await main();
