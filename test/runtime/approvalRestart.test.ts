// Approvals survive the process: a run parked in a process that exits, crashes (SIGKILL) or lives on is not
// interrupted at open, stays parked, and goes on in whichever process records the decision.
import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { openPgliteStore } from "../../src/events/pgliteStore.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, internalsOf, type Runtime } from "../../src/runtime/runtime.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { parkingModel } from "./approvalScript.ts";
import { deployTool } from "../support/approvalTools.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

/** Starts the child on `where`; resolves once its run is parked, with the ids it printed and a way to end it. */
const parkInChild = async (where: string, mode: "wait" | "close") => {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL("./approvalChild.ts", import.meta.url).pathname, where, mode],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const output: string[] = [];
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const [contextId, approvalId] = await new Promise<[string, string]>((resolve, reject) => {
    let buf = "";
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        output.push(line);
        if (line.startsWith("parked ")) resolve(line.split(" ").slice(1, 3) as [string, string]);
      }
    });
    void exited.then((code) => reject(new Error(`child exited before parking (${code}): ${output.join(" | ")}`)));
  });
  return { child, contextId, approvalId, output, exited };
};

const ranHere: string[] = [];
const deploy = deployTool((env) => {
  ranHere.push(env);
  return `deployed to ${env} by ${process.pid}`;
});

const openHere = (store: EventStore) =>
  createRuntime({
    store,
    model: parkingModel(),
    tools: [deploy],
    limits: { leaseTtlMs: 500, passivateAfterMs: 60_000 },
  });

/** Resolves with the end of context `id`'s run, from the log. */
const runEnd = async (rt: Runtime, id: string, after: number) =>
  new Promise<string>((resolve) => {
    void rt.subscribe(
      (e) => {
        if (
          e.streamId === id &&
          (e.type === "RunCompleted" ||
            e.type === "RunFailed" ||
            e.type === "RunInterrupted" ||
            e.type === "RunStopped")
        ) {
          resolve(e.type === "RunCompleted" ? e.data.response : e.type);
        }
      },
      { after },
    );
  });

const expectParkedThenApproved = async (rt: Runtime, store: EventStore, contextId: string, approvalId: string) => {
  // Not interrupted at open, nor by a sweep: still running, awaiting the same approval.
  await internalsOf(rt).recoverInterruptedRuns();
  expect(await rt.context(contextId)).toMatchObject({ status: "running", awaitingApproval: [approvalId] });
  expect((await rt.events({ contextId })).map((e) => e.type)).not.toContain("RunInterrupted");
  expect((await rt.approvals()).map((a) => a.approvalId)).toEqual([approvalId]);
  ranHere.length = 0;
  const ended = runEnd(rt, contextId, await store.headPosition());
  await rt.approve(approvalId, { by: "alice" });
  // The run goes on in this process: the tool runs here, once, and the model gets its result.
  expect(await ended).toBe(`done: deployed to prod by ${process.pid}`);
  expect(ranHere).toEqual(["prod"]);
  expect(await rt.context(contextId)).toMatchObject({ status: "idle", awaitingApproval: [] });
};

describe("when the process that parked a run is gone (PGlite data dir)", () => {
  it.each(["close", "wait"] as const)(
    "after it %s (wait: SIGKILL), then a reopen finds the run parked and an approval there runs it on",
    async (mode) => {
      const dataDir = await copyPgliteTemplate();
      dirs.push(dataDir);
      const { child, contextId, approvalId, exited } = await parkInChild(dataDir, mode);
      if (mode === "wait") child.kill("SIGKILL");
      await exited;
      const store = await openPgliteStore({ dataDir });
      const rt = await openHere(store);
      await expectParkedThenApproved(rt, store, contextId, approvalId);
      await rt.close();
      await store.close();
    },
  );
});

describeWithPostgres("when a run is parked by another process on PostgreSQL", () => {
  const db = usePostgresDatabase("actorzero_approvals");

  it("while that process lives, then this one sees the approval, decides it and runs the call on here", async () => {
    const { child, contextId, approvalId, output, exited } = await parkInChild(db.url(), "wait");
    const store = await openPostgresStore({ url: db.url() });
    const rt = await openHere(store);
    try {
      await expectParkedThenApproved(rt, store, contextId, approvalId);
      expect(output.filter((l) => l.startsWith("ran "))).toEqual([]);
    } finally {
      child.kill("SIGKILL");
      await exited;
      await rt.close();
      await store.close();
    }
  });

  it("after it is killed, then the sweeper leaves the parked run alone and a decision here runs it on", async () => {
    const { child, contextId, approvalId, exited } = await parkInChild(db.url(), "wait");
    child.kill("SIGKILL");
    await exited;
    const store = await openPostgresStore({ url: db.url() });
    const rt = await openHere(store);
    try {
      await expectParkedThenApproved(rt, store, contextId, approvalId);
    } finally {
      await rt.close();
      await store.close();
    }
  });
});
