// Footprint: each scenario in a fresh child process, its wall time and peak RSS beside the bar it must meet.
//
// Rows: an in-memory store + runtime + one run; a new data dir + one run; reopening it + one run;
// the data dir's size after the offline demo; `actorzero contexts` on it; and how long `npm start`
// (the demo on a new data dir) takes to print its first line. Children run through tsx, as
// `npm start` does, so the figures include transpiling the sources.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Row } from "./main.ts";

const root = path.resolve(import.meta.dirname, "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");
const cli = path.join(root, "src", "cli", "main.ts");

type Measured = { ms: number; maxRssMb: number; firstOutputMs?: number };

/** Runs `tsx args` with /usr/bin/time when present (peak RSS of the whole process tree), else the child's own report. */
const measure = (args: string[], options: { cwd?: string } = {}): Promise<Measured & { stdout: string }> =>
  new Promise((resolve, reject) => {
    const timeBin = fs.existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
    const statsFile = path.join(os.tmpdir(), `actorzero-footprint-${process.pid}-${Math.random().toString(36).slice(2)}`);
    const [cmd, argv] = timeBin ? [timeBin, ["-f", "%e %M", "-o", statsFile, tsx, ...args]] : [tsx, args];
    const started = performance.now();
    let firstOutputMs: number | undefined;
    let stdout = "";
    let stderr = "";
    const child = spawn(cmd, argv, { cwd: options.cwd ?? root, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (chunk: Buffer) => {
      firstOutputMs ??= performance.now() - started;
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - started;
      if (code !== 0) return reject(new Error(`footprint child ${args.join(" ")} exited ${code}: ${stderr.slice(-2000)}`));
      let maxRssMb = Number.NaN;
      if (timeBin) {
        const [, kb] = fs.readFileSync(statsFile, "utf8").trim().split(/\s+/).slice(-2);
        fs.rmSync(statsFile, { force: true });
        maxRssMb = Number(kb) / 1024;
      } else {
        const line = stdout.trim().split("\n").at(-1) ?? "{}";
        maxRssMb = (JSON.parse(line) as Partial<Measured>).maxRssMb ?? Number.NaN;
      }
      resolve({ ms, maxRssMb, stdout, ...(firstOutputMs === undefined ? {} : { firstOutputMs }) });
    });
  });

const duBytes = (dir: string): number => {
  const out = spawnSync("du", ["-sk", dir], { encoding: "utf8" });
  if (out.status === 0) return Number(out.stdout.split(/\s/)[0]) * 1024;
  let total = 0;
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) if (e.isFile()) total += fs.statSync(path.join(e.parentPath, e.name)).size;
  return total;
};

const rows = (name: string, m: Measured, bar: { s: number; mb?: number }): Row[] => [
  { name: `${name}: time`, value: m.ms / 1000, unit: "s", target: `≤ ${bar.s} s` },
  ...(bar.mb === undefined && !Number.isFinite(m.maxRssMb) ? [] : [{ name: `${name}: peak RSS`, value: m.maxRssMb, unit: "MB", target: bar.mb === undefined ? "" : `≤ ${bar.mb} MB` }]),
];

export const run = async (): Promise<Row[]> => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "actorzero-footprint-"));
  const child = path.join(root, "bench", "footprintChild.ts");
  try {
    // Warm the image cache once, so every row measures a start with the cache in place.
    await measure([child, "memory"]);
    const out: Row[] = [];
    out.push(...rows("in-memory store + runtime + one run", await measure([child, "memory"]), { s: 1.0, mb: 300 }));
    const dir = path.join(work, "data");
    out.push(...rows("new data dir + one run", await measure([child, "new", dir]), { s: 2.0, mb: 300 }));
    out.push(...rows("reopen the data dir + one run", await measure([child, "reopen", dir]), { s: 1.0, mb: 300 }));

    const demoDir = path.join(work, "demo");
    const demo = await measure([cli, "run", "--offline", "--data-dir", demoDir]);
    out.push({ name: "npm start (demo, new data dir): first output", value: (demo.firstOutputMs ?? demo.ms) / 1000, unit: "s", target: "≤ 1 s" });
    out.push({ name: "data dir after the demo", value: duBytes(demoDir) / 1024 / 1024, unit: "MB", target: "≤ 8 MB" });
    out.push(...rows("actorzero contexts on the demo's data dir", await measure([cli, "contexts", "--data-dir", demoDir]), { s: 1.5 }));

    // A long life: RSS after all runs against RSS after the first tenth (no leak in actors, subscriptions, projections).
    const runs = process.env.BENCH_QUICK === "1" ? 1_000 : 10_000;
    const long = JSON.parse((await measure([child, "long", String(runs)])).stdout.trim().split("\n").at(-1)!) as { rssAfterTenthMb: number; rssAtEndMb: number };
    out.push({
      name: `RSS after ${runs} sequential runs on one store`,
      value: long.rssAtEndMb,
      unit: "MB",
      compareTo: `RSS after ${runs / 10} runs`,
      ratio: long.rssAtEndMb / long.rssAfterTenthMb,
      target: "≤ 1.2×",
    });
    return out;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
};
