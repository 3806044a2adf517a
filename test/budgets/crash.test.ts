// A crash in the middle of a budgeted fan-out: the process is killed (SIGKILL) while its 64 leaves draw on the
// tree's budget, and a new process opens the log. The budget carries on exactly: the reservations the killed
// process left are settled from the replies the log holds or released, so what the tree spent is the usage of
// its recorded replies, counted once; it comes to rest within its budget plus one reservation, as it would have,
// and finishes once extended, with nothing left reserved.
import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { openPgliteStore, type RecordedEvent } from "../../src/index.ts";
import { foldBudget } from "../../src/projections/budget.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { FAN } from "./support.ts";

const CHILD = new URL("./crashChild.ts", import.meta.url).pathname;
const LIMIT = 60_000;
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

/** One process of crashChild.ts: its output lines, a wait for a line, its exit. */
const child = (args: string[]) => {
  const p = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let buffer = "";
  p.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      lines.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
    for (const w of waiters) w();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    p.once("exit", (code, signal) => r({ code, signal })),
  );
  const until = (match: (lines: string[]) => boolean) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!match(lines)) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      void exited.then(() =>
        match(lines)
          ? resolve()
          : reject(new Error(`the child exited first; it printed: ${lines.slice(-5).join(" | ")}`)),
      );
      check();
    });
  return { lines, until, exited, kill: () => p.kill("SIGKILL") };
};

describe("when the process running a budgeted 64-leaf fan-out is killed and the log reopened", () => {
  it(
    "settles or releases what it left reserved, spends exactly the usage of the recorded replies, parks within budget, and finishes when extended",
    { timeout: 240_000 },
    async () => {
      const dataDir = await copyPgliteTemplate();
      dirs.push(dataDir);

      // Killed after a few model calls have begun: leaves are reserving, calling and settling at once.
      const calls = 4 + Math.floor(Math.random() * 16);
      const first = child(["start", dataDir, String(LIMIT)]);
      await first.until((l) => l.filter((x) => x === "call").length >= calls);
      first.kill();
      expect((await first.exited).signal).toBe("SIGKILL");
      const root = first.lines.find((l) => l.startsWith("root "))!.slice(5);

      const killedLog = await (async () => {
        const store = await openPgliteStore({ dataDir });
        try {
          return await store.readAll();
        } finally {
          await store.close();
        }
      })();
      // The tree's budget facts and the replies that settle its reservations, in log order (the log holds this one tree).
      const budgetFold = (log: RecordedEvent[]) =>
        foldBudget(log.filter((e) => e.streamId === `${root}:budget` || e.type === "ModelReplied"));
      const leftOpen = budgetFold(killedLog);
      expect(leftOpen.limits).toEqual({ totalTokens: LIMIT });
      // It was killed inside a model call: that call's reservation (at least) was left open.
      expect(Object.keys(leftOpen.open).length).toBeGreaterThan(0);

      const second = child(["resume", dataDir]);
      expect(await second.exited).toEqual({ code: 0, signal: null });
      expect(second.lines.at(-1)).toBe("completed");
      const rest = second.lines.find((l) => l.startsWith("rest "));
      expect(rest).toBeDefined();
      const atRest = JSON.parse(rest!.slice(5)) as {
        spent: { totalTokens: number };
        reserved: { modelCalls: number };
        parked: unknown[];
      };

      const store = await openPgliteStore({ dataDir });
      try {
        const log = await store.readAll();
        const budgetFacts = log.filter((e) => e.streamId === `${root}:budget`);
        const budget = budgetFold(log);
        // No reservation leaks: every one made (by either process) is settled exactly once, by its reply or by a
        // BudgetSettled (a call the kill cut off, released on takeover).
        const reserved = budgetFacts.flatMap((e) => (e.type === "BudgetReserved" ? [e.data.reservationId] : []));
        const settled = log.flatMap((e) =>
          e.type === "BudgetSettled"
            ? [e.data.reservationId]
            : e.type === "ModelReplied" && e.data.settles
              ? [e.data.settles.reservationId]
              : [],
        );
        expect(new Set(settled).size).toBe(settled.length);
        expect(new Set(settled)).toEqual(new Set(reserved));
        expect(budget.open).toEqual({});
        // Spent is the usage of the replies the log holds: each call counted once, none lost, none twice.
        // The log holds this one tree.
        const replies = log.filter(
          (e): e is Extract<RecordedEvent, { type: "ModelReplied" }> => e.type === "ModelReplied",
        );
        // One reply per step of every run; a job the kill cut off before its subordinate started is answered as
        // interrupted when its run resumes (as without a budget), so its leaf may never have run.
        expect(replies.length).toBeLessThanOrEqual(1 + FAN + FAN * FAN + 1 + FAN);
        expect(replies.length).toBeGreaterThan(FAN * FAN);
        const sum = (f: (r: (typeof replies)[number]) => number) => replies.reduce((a, r) => a + f(r), 0);
        expect(budget.spent).toMatchObject({
          inputTokens: sum((r) => r.data.usage!.inputTokens),
          outputTokens: sum((r) => r.data.usage!.outputTokens),
          modelCalls: replies.length,
          toolCalls: sum((r) => r.data.toolCalls.length),
        });
        // At rest it had parked within its budget plus one reservation, holding nothing, as an uncrashed run does.
        const asked = budgetFacts.flatMap((e) =>
          e.type === "BudgetReserved" ? [e.data.amount.inputTokens + e.data.amount.outputTokens] : [],
        );
        expect(atRest.spent.totalTokens).toBeLessThanOrEqual(LIMIT + Math.max(...asked));
        expect(atRest.reserved.modelCalls).toBe(0);
        expect(atRest.parked.length).toBeGreaterThan(0);
        expect(log.filter((e) => e.type === "RunFailed" || e.type === "RunInterrupted")).toEqual([]);
      } finally {
        await store.close();
      }
    },
  );
});
