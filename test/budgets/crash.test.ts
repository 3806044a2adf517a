// A crash in the middle of a budgeted fan-out: the process is killed (SIGKILL) while its 64 leaves draw on the
// tree's budget, and a new process opens the log. The budget carries on exactly: the log (one writer's) holds what
// each call spent, never a reservation, so the calls the kill cut off hold nothing; what the tree spent is the
// usage of its recorded replies, counted once; it comes to rest within its budget plus one reservation, as it
// would have, and finishes once extended, with nothing left reserved.
import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { openPgliteStore, type RecordedEvent } from "../../src/index.ts";
import { readBudget } from "../../src/projections/budget.ts";
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
    "holds nothing for the calls it cut off, spends exactly the usage of the recorded replies, parks within budget, and finishes when extended",
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

      const killed = await (async () => {
        const store = await openPgliteStore({ dataDir });
        try {
          return { log: await store.readAll(), budget: await readBudget(store, root) };
        } finally {
          await store.close();
        }
      })();
      expect(killed.budget.limits).toEqual({ totalTokens: LIMIT });
      // It was killed inside model calls: calls on the log with no reply yet, of which the budget holds nothing.
      const answered = new Set(
        killed.log.flatMap((e) =>
          e.type === "ModelReplied" || e.type === "ModelCallFailed"
            ? [`${e.streamId}/${e.data.runId}/${e.data.step}`]
            : [],
        ),
      );
      const cutOff = killed.log.filter(
        (e) => e.type === "ModelCalled" && !answered.has(`${e.streamId}/${e.data.runId}/${e.data.step}`),
      );
      expect(cutOff.length).toBeGreaterThan(0);
      expect(killed.budget.open).toEqual({});
      expect(killed.budget.reserved.modelCalls).toBe(0);

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
        const budget = await readBudget(store, root);
        // No reservation reaches a log with one writer, and each settle on it (a reply's, or a BudgetSettled) is
        // of a call of its own.
        expect(log.filter((e) => e.type === "BudgetReserved")).toEqual([]);
        const settled = log.flatMap((e) =>
          e.type === "BudgetSettled"
            ? [e.data.reservationId]
            : e.type === "ModelReplied" && e.data.settles
              ? [e.data.settles.reservationId]
              : [],
        );
        expect(new Set(settled).size).toBe(settled.length);
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
        // A call reserves its counted input (what each reply reports here) plus the most output it may write.
        const mostOutput = Math.max(
          ...log.flatMap((e) => (e.type === "BudgetExhausted" ? [e.data.asked.outputTokens] : [])),
        );
        const asked = replies.map((r) => r.data.usage!.inputTokens + mostOutput);
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
