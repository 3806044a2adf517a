// Every command's wall time as a user runs it (a process of its own) on the data dir the demo leaves.
// The CLI is the built one (dist/, as an installed package runs it, with the compile cache that
// bin/actorzero.js turns on), not the sources through tsx.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Row } from "./main.ts";
import { builtCli } from "./support/builtDist.ts";

let compileCache = "";

const timed = (args: string[]): { ms: number; stdout: string } => {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", NODE_COMPILE_CACHE: compileCache };
  delete env["OPENAI_API_KEY"];
  const started = performance.now();
  const r = spawnSync(process.execPath, [builtCli(), ...args], { env, encoding: "utf8" });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`actorzero ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return { ms, stdout: r.stdout };
};

export const run = async (): Promise<Row[]> => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "actorzero-bench-cli-"));
  const d = ["--data-dir", path.join(dir, "data")];
  compileCache = path.join(dir, "compile-cache");
  try {
    timed(["--help"]); // builds dist/ and warms the compile cache
    const rows: Row[] = [];
    const demo = timed(["run", ...d]);
    rows.push({ name: "run (the demo, a fresh data dir)", value: demo.ms, unit: "ms" });
    const id = /^A0 default ([0-9a-f]{8})/m.exec(demo.stdout)![1]!;
    const version = timed(["--version"]);
    rows.push({ name: "--version (start-up alone)", value: version.ms, unit: "ms" });
    const commands: [string, string[]][] = [
      ["contexts", ["contexts"]],
      ["tree", ["tree"]],
      ["audit", ["audit", id]],
      ["events", ["events"]],
      ["replay --verify", ["replay", "--verify"]],
      ["replay", ["replay"]],
      ["send", ["send", id, "And a short summary, please", "--offline"]],
      ["stop", ["stop", id]],
    ];
    for (const [name, args] of commands) {
      rows.push({
        name,
        value: timed([...args, ...d]).ms,
        unit: "ms",
        compareTo: "--version (start-up alone)",
        ratio: 0,
      });
    }
    for (const r of rows) if (r.compareTo) r.ratio = r.value / version.ms;
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
