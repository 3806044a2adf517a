// `npm run bench` where a module cannot run: the web module without Chromium says why, and the table still prints.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { TSX } from "../cli/support.ts";

const MAIN = fileURLToPath(new URL("../../bench/main.ts", import.meta.url));

const bench = (args: string[], env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ["--import", TSX, MAIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });

describe("given no Chromium where the web module looks for it", () => {
  it(
    "when the bench runs it, then it is skipped with the reason, the table and the JSON line still print, and the run succeeds",
    { timeout: 120_000 },
    async () => {
      const missing = "/nonexistent/chromium-for-the-bench";
      const r = await bench(["web"], { BENCH_QUICK: "1", ACTORZERO_CHROMIUM: missing });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`bench web: skipped: no Chromium at ${missing}`);
      expect(r.stdout).toContain("(index)");
      expect(r.stdout).toContain(`web: skipped (no Chromium at ${missing}`);
      const json = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as {
        results: unknown[];
        notRun: { module: string; skipped?: string }[];
      };
      expect(json.results).toEqual([]);
      expect(json.notRun).toEqual([{ module: "web", skipped: expect.stringContaining(missing) }]);
    },
  );

  it(
    "when it runs with a module that can run, then that module's rows print in the table and the JSON, with the skip line after",
    { timeout: 300_000 },
    async () => {
      const missing = "/nonexistent/chromium-for-the-bench";
      const r = await bench(["delegation", "web"], { BENCH_QUICK: "1", ACTORZERO_CHROMIUM: missing });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/bench delegation: \d+\.\d s/);
      expect(r.stderr).toContain(`bench web: skipped: no Chromium at ${missing}`);
      const lines = r.stdout.trim().split("\n");
      const tableRows = lines.filter((l) => l.includes("'delegation'") && l.includes("ms"));
      expect(tableRows.length).toBeGreaterThan(0);
      const skipLine = lines.findIndex((l) => l.startsWith(`web: skipped (no Chromium at ${missing}`));
      expect(skipLine).toBeGreaterThan(lines.indexOf(tableRows.at(-1)!));
      const json = JSON.parse(lines.at(-1)!) as {
        results: { module: string; value: number }[];
        notRun: { module: string }[];
      };
      expect(json.results.length).toBe(tableRows.length);
      expect(json.results.every((row) => row.module === "delegation" && Number.isFinite(row.value))).toBe(true);
      expect(json.notRun.map((m) => m.module)).toEqual(["web"]);
    },
  );

  it(
    "when the web module is run alone (--only web), then it answers with the reason instead of throwing",
    { timeout: 120_000 },
    async () => {
      const missing = "/nonexistent/chromium-for-the-bench";
      const r = await bench(["--only", "web"], { BENCH_QUICK: "1", ACTORZERO_CHROMIUM: missing });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout.trim())).toEqual({
        module: "web",
        skipped: expect.stringContaining(`no Chromium at ${missing}`),
      });
    },
  );
});
