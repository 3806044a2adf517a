// Kills a process growing trees (three levels, parallel jobs) at random moments, over and over, with recovery
// "resume", and checks what the log and the tools say once every tree is done. ACTORZERO_CRASH_KILLS sets
// how many kills (ACTORZERO_CRASH_KILLS=100 for the full proof; the default keeps the suite's time in bounds).
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { createRuntime, openPgliteStore, scriptedModel } from "../../src/index.ts";
import { assertInvariants } from "../../src/testing/index.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { CALLS_PER_TREE, treeReply, treeTools } from "./tree.ts";

const KILLS = Number(process.env.ACTORZERO_CRASH_KILLS ?? 5);
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

type Life = { lines: string[]; at: Map<string, number>; exited: Promise<void>; kill(): void; opened: Promise<boolean> };

const CHILD = new URL("./crashChild.ts", import.meta.url).pathname;

/** One process of the tree grower; `opened` resolves true once its runtime is up, false if it exited first. */
const live = (dataDir: string, trees: number, sideEffects: string, modelCalls: string): Life => {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, dataDir, String(trees), sideEffects, modelCalls], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: string[] = [];
  const at = new Map<string, number>();
  let buffer = "";
  let onOpen: (ok: boolean) => void = () => undefined;
  const opened = new Promise<boolean>((r) => (onOpen = r));
  child.stdout.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      lines.push(line);
      at.set(line, performance.now());
      if (line === "open") onOpen(true);
    }
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  void exited.then(() => onOpen(false));
  return { lines, at, exited, opened, kill: () => child.kill("SIGKILL") };
};

describe(`when a process growing trees is killed ${KILLS} times at random moments, with recovery "resume"`, () => {
  it(
    "completes every tree, makes again only the model calls in flight at each kill, never runs a side effect twice, and keeps the invariants",
    { timeout: 60_000 + KILLS * 15_000 },
    async () => {
      const dataDir = await copyPgliteTemplate();
      dirs.push(dataDir);
      const sideEffects = path.join(dataDir, "..", `${path.basename(dataDir)}-notes.txt`);
      const modelCalls = path.join(dataDir, "..", `${path.basename(dataDir)}-calls.txt`);
      writeFileSync(sideEffects, "");
      writeFileSync(modelCalls, "");
      const inFlight = new Set<number>();
      const recordInFlight = (life: Life) => {
        for (const line of life.lines)
          if (line.startsWith("inflight"))
            for (const p of line.split(" ").slice(1).filter(Boolean)) inFlight.add(Number(p));
      };

      // Two first trees, uninterrupted: the second says how long a tree takes here once warm, and the kills
      // land within that time after open.
      const first = live(dataDir, 2, sideEffects, modelCalls);
      await first.exited;
      expect(first.lines.at(-1)).toBe("done");
      const treeMs = first.at.get("tree 2")! - first.at.get("tree 1")!;

      let kills = 0;
      while (kills < KILLS) {
        const life = live(dataDir, KILLS + 1, sideEffects, modelCalls);
        // Mostly while a tree grows; now and then while the process is still opening the log and resuming.
        if (Math.random() < 0.15) await delay(Math.random() * 1000);
        else if (await life.opened) await delay(Math.random() * treeMs);
        life.kill();
        await life.exited;
        recordInFlight(life);
        if (process.env.ACTORZERO_CRASH_TRACE) console.log(`kill ${kills + 1}: ${life.lines.join(" / ")}`);
        kills += 1;
      }
      // The last process is left alone: it finishes the trees begun, and starts none.
      const last = live(dataDir, 0, sideEffects, modelCalls);
      await last.exited;
      recordInFlight(last);
      expect(last.lines.at(-1)).toBe("done");

      const store = await openPgliteStore({ dataDir });
      const rt = await createRuntime({ store, model: scriptedModel(treeReply), tools: treeTools() });
      try {
        const contexts = await rt.contexts();
        const roots = contexts.filter((c) => c.depth === 0);
        const ran = contexts.filter((c) => c.lastRun !== null);
        // Every tree completed: five contexts each, every run completed (a child created just before a kill,
        // whose delegation was not recorded, is left without a run and made again).
        expect(roots.length).toBeGreaterThan(0);
        for (const c of ran) expect(c.lastRun?.status, `${c.name} (A${c.agentNumber})`).toBe("completed");
        expect(ran).toHaveLength(roots.length * 5);

        const events = await rt.events();
        const modelCalled = events.filter((e) => e.type === "ModelCalled").length;
        const uninterrupted = roots.length * CALLS_PER_TREE;
        // The log: the uninterrupted run's calls, plus one more for each call in flight at a kill.
        const calls = events.filter(
          (e) =>
            e.type === "ModelCalled" ||
            e.type === "ModelReplied" ||
            e.type === "RunStarted" ||
            e.type === "RunCompleted",
        );
        const story = calls.map(
          (e) =>
            `${e.globalPosition} ${e.streamId.slice(0, 8)} ${e.type} ${JSON.stringify({ ...e.data, text: undefined, toolCalls: undefined, usage: undefined, model: undefined, superior: undefined, response: undefined })}`,
        );
        expect(modelCalled, `in flight at kills: ${[...inFlight].join(", ")}\n${story.join("\n")}`).toBe(
          uninterrupted + inFlight.size,
        );
        // The model: no fewer calls than the uninterrupted run, no more than the log says were made.
        const made = readFileSync(modelCalls, "utf8").split("\n").filter(Boolean).length;
        expect(made).toBeGreaterThanOrEqual(uninterrupted);
        expect(made).toBeLessThanOrEqual(modelCalled);
        // `note` (not idempotent) ran at most once per call, whatever the kills.
        const notes = readFileSync(sideEffects, "utf8").split("\n").filter(Boolean);
        expect(new Set(notes).size).toBe(notes.length);
        expect(notes.length).toBeLessThanOrEqual(roots.length * 2);
        await assertInvariants(rt);
        console.log(
          `crash-resume: ${kills} kills (a tree takes ${Math.round(treeMs)} ms), ${roots.length} trees, ${modelCalled} ModelCalled (${uninterrupted} uninterrupted + ${inFlight.size} in flight at kills), ${made} model calls made, ${notes.length} notes`,
        );
      } finally {
        await rt.close();
        await store.close();
      }
    },
  );
});
