// Readers tell the truth about dead runs: a run whose process is gone shows as interrupted without anything being
// written, and its time ends at its last event (before and after a writing command records the interruption).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContextRow } from "../../src/cli/commands/contexts.ts";
import type { TreeJson } from "../../src/cli/commands/tree.ts";
import { createRuntime, openPostgresStore, scriptedModel } from "../../src/index.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { gate } from "../server/support.ts";
import { cli, jsonLines, startCli } from "./support.ts";

type EventJson = {
  position: number;
  streamId: string;
  type: string;
  recordedAt: string;
  data: Record<string, unknown>;
};

describe("given a run killed with SIGKILL on a PGlite data dir", () => {
  let dataDir: string;
  let rootId: string;
  let before: EventJson[];

  beforeAll(async () => {
    dataDir = await copyPgliteTemplate();
    const run = startCli(["run", "--events", "--latency", "20000", "--data-dir", dataDir, "Write a haiku about logs"]);
    const line = await run.waitForLine(/ A0 default .* ModelCalled /, 180_000);
    rootId = /A0 default\s+([0-9a-f]{8})/.exec(line)![1]!;
    run.child.kill("SIGKILL");
    await run.done;
    before = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
  }, 300_000);
  afterAll(async () => removeDir(dataDir));

  /** The root run's time as the log tells it: from RunStarted to its last event other than RunInterrupted. */
  const rootRunMs = (events: EventJson[]) => {
    const mine = events.filter(
      (e) => e.streamId.startsWith(rootId) && e.type !== "RunInterrupted" && e.data["runId"] !== undefined,
    );
    const started = mine.find((e) => e.type === "RunStarted")!;
    return Date.parse(mine.at(-1)!.recordedAt) - Date.parse(started.recordedAt);
  };

  it(
    "when contexts and tree read it, then the root shows interrupted, timed to its last event, and nothing is written",
    { timeout: 240_000 },
    async () => {
      // One after the other: each reader holds the data dir while it reads.
      const contexts = await cli(["contexts", "--json", "--data-dir", dataDir]);
      const interrupted = await cli(["contexts", "--status", "interrupted", "--json", "--data-dir", dataDir]);
      const tree = await cli(["tree", "--json", "--data-dir", dataDir]);
      const rows = JSON.parse(contexts.stdout) as ContextRow[];
      expect(rows.find((r) => r.id.startsWith(rootId))).toMatchObject({
        status: "running",
        shownStatus: "interrupted",
      });
      expect((JSON.parse(interrupted.stdout) as ContextRow[]).map((r) => r.id.slice(0, 8))).toContain(rootId);
      const [root] = JSON.parse(tree.stdout) as TreeJson[];
      expect(root).toMatchObject({ shownStatus: "interrupted", elapsedMs: rootRunMs(before) });
      const after = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
      expect(after.map((e) => e.position)).toEqual(before.map((e) => e.position));
    },
  );

  it(
    "when a writing command then records the interruption, then the time still ends at the run's last event",
    { timeout: 240_000 },
    async () => {
      const stop = await cli(["stop", rootId, "--data-dir", dataDir]);
      expect(stop.stdout).toContain("now recorded as interrupted");
      const events = jsonLines<EventJson>((await cli(["events", "--json", "--data-dir", dataDir])).stdout);
      expect(events.some((e) => e.type === "RunInterrupted" && e.streamId.startsWith(rootId))).toBe(true);
      const [root] = JSON.parse((await cli(["tree", "--json", "--data-dir", dataDir])).stdout) as TreeJson[];
      expect(root).toMatchObject({ shownStatus: "interrupted", elapsedMs: rootRunMs(before) });
      const audit = JSON.parse((await cli(["audit", rootId, "--json", "--data-dir", dataDir])).stdout);
      expect(audit.context.runs[0]).toMatchObject({ status: "interrupted", durationMs: rootRunMs(before) });
    },
  );
});

describeWithPostgres("given a run on PostgreSQL whose owner's lease is gone", () => {
  const db = usePostgresDatabase("actorzero_dead");

  it("when contexts reads the log, then a run with a live lease shows running and one without shows interrupted, nothing written", async () => {
    const store = await openPostgresStore({ url: db.url() });
    const held = gate();
    const rt = await createRuntime({
      store,
      model: scriptedModel(async () => {
        await held.opened;
        return { text: "done" };
      }),
      limits: { leaseTtlMs: 120_000 },
    });
    try {
      const ctx = await rt.createContext();
      const started = await rt.start(ctx.id, "wait for it");
      const read = async () =>
        (JSON.parse((await cli(["contexts", "--json", "--store", db.url()])).stdout) as ContextRow[]).find(
          (r) => r.id === ctx.id,
        );
      expect(await read()).toMatchObject({ shownStatus: "running" });
      // The owner stops renewing (as a process that died): its lease is gone.
      await store.sql.query("DELETE FROM context_leases WHERE context_id = $1", [ctx.id]);
      const head = await store.headPosition();
      expect(await read()).toMatchObject({ status: "running", shownStatus: "interrupted" });
      expect(await store.headPosition()).toBe(head);
      held.open();
      await started.ended;
    } finally {
      held.open();
      await rt.close();
      await store.close();
    }
  }, 180_000);
});
