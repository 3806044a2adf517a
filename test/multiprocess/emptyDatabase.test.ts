// Processes that open the same empty PostgreSQL database at the same moment each create the log's schema, the
// projections' tables and the lease table if missing: neither may fail on the other's half-made catalog rows.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { expect, it } from "vitest";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

/** Each process opens all of these at once: several empty databases per run make the collision likely without the guard. */
const DATABASES = 6;

const startWorker = (urls: string[]) => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL("./openWorker.ts", import.meta.url).pathname, ...urls],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const next = (match: (line: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      lines.on("line", (line) => match(line) && resolve(line));
      child.once("exit", (code) => reject(new Error(`the worker exited (${code}) before answering`)));
    });
  return { child, ready: next((l) => l === "ready"), result: next((l) => l === "ok" || l.startsWith("fail")) };
};

describeWithPostgres("when two processes open the same empty PostgreSQL database at once", () => {
  const db = usePostgresDatabase("actorzero_empty");

  it("both open it: the schema, projections and leases are created once, without a catalog collision", async () => {
    const urls = await Promise.all(Array.from({ length: DATABASES }, () => db.fresh()));
    const workers = [startWorker(urls), startWorker(urls)];
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.child.stdin!.end("go\n");
    const results = await Promise.all(workers.map((w) => w.result));
    expect(results).toEqual(["ok", "ok"]);
  }, 120_000);
});
