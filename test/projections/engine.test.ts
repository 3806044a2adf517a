// The persisted projections on a real PGlite store: incremental equals rebuilt, idempotent, versioned, queryable.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventDecodeError } from "../../src/events/errors.ts";
import type { ContextId, JobId, RunId } from "../../src/events/ids.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { DomainEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { ALL_PROJECTIONS } from "../../src/projections/all.ts";
import { contextsProjection } from "../../src/projections/contexts.ts";
import { foldSnapshot, openProjections } from "../../src/projections/engine.ts";
import { NOT_RUN_RESULT } from "../../src/projections/transcript.ts";
import { recordedSequenceArb } from "../../src/testing/sequenceArbitraries.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { eventually } from "../support/async.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

describe("on PGlite", () => {
  suite(() => freshPgliteStore(), 15);
});

describeWithPostgres("on PostgreSQL", () => {
  const db = usePostgresDatabase();
  suite(() => openPostgresStore({ url: db.url() }), 8);
});

/** The same behaviour on every store adapter; `numRuns` is for the slow properties. */
function suite(open: () => Promise<EventStore>, numRuns: number) {
  let store: EventStore;
  let tables = 0;
  /** A fresh table prefix per engine: the log is shared (append-only), the projections are not. */
  const prefix = () => `t${++tables}_`;

  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    await store?.close();
  });

  const readLog = async (): Promise<RecordedEvent[]> => {
    const out: RecordedEvent[] = [];
    for await (const e of store.iterateAll(0, 5000)) out.push(e);
    return out;
  };

  /** Appends recorded events again through the store (which assigns positions), consecutive same-stream events in one append. */
  const appendAll = async (events: readonly RecordedEvent[]) => {
    let i = 0;
    while (i < events.length) {
      const streamId = events[i]!.streamId;
      const batch: DomainEvent[] = [];
      while (i < events.length && events[i]!.streamId === streamId) {
        const { type, data } = events[i++]!;
        batch.push({ type, data } as DomainEvent);
      }
      await store.append(streamId, batch, { expectedVersion: "any" });
    }
  };

  describe("the persisted projections", () => {
    it("applied incrementally in random chunks and pages equal a rebuild from zero and the in-memory folds", async () => {
      await fc.assert(
        fc.asyncProperty(
          recordedSequenceArb(),
          fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
          fc.integer({ min: 1, max: 25 }),
          fc.boolean(),
          async (log, chunkSizes, pageSize, concurrent) => {
            const engine = await openProjections(store, ALL_PROJECTIONS, { prefix: prefix(), pageSize });
            try {
              let i = 0;
              let k = 0;
              while (i < log.length) {
                const n = chunkSizes[k++ % chunkSizes.length]!;
                await appendAll(log.slice(i, i + n));
                i += n;
                if (concurrent) await Promise.all([engine.catchUp(), engine.catchUp(), engine.catchUp()]);
                else await engine.catchUp();
              }
              const live = await engine.snapshot();
              expect(live).toEqual(await engine.rebuildInto("scratch_"));
              expect(live).toEqual(foldSnapshot(await readLog()));
            } finally {
              await engine.drop();
            }
          },
        ),
        { numRuns },
      );
    });

    it("changes nothing when pages are applied again after the checkpoint moved back", async () => {
      await fc.assert(
        fc.asyncProperty(recordedSequenceArb(), fc.double({ min: 0, max: 1, noNaN: true }), async (log, back) => {
          await appendAll(log);
          const p = prefix();
          const engine = await openProjections(store, ALL_PROJECTIONS, { prefix: p, pageSize: 7 });
          try {
            const before = await engine.snapshot();
            const head = await store.headPosition();
            await store.sql.query(`UPDATE ${p}projection_checkpoints SET position = $1`, [Math.floor(head * back)]);
            const again = await openProjections(store, ALL_PROJECTIONS, { prefix: p, pageSize: 7 });
            expect(await again.snapshot()).toEqual(before);
            expect((await again.checkpoints()).map((c) => c.position)).toEqual(ALL_PROJECTIONS.map(() => head));
          } finally {
            await engine.drop();
          }
        }),
        { numRuns: Math.ceil(numRuns / 2) },
      );
    });

    describe("when opened again over a long log", () => {
      it("continues from its checkpoints instead of replaying the log", async () => {
        const p = prefix();
        const first = await openProjections(store, ALL_PROJECTIONS, { prefix: p });
        const head = await first.catchUp();
        const counting = countingReads(store);
        const again = await openProjections(counting.store, ALL_PROJECTIONS, { prefix: p });
        expect(counting.eventsRead()).toBe(0);
        expect(await again.snapshot()).toEqual(await first.snapshot());
        await store.append("ctx-late", [created("ctx-late")], { expectedVersion: "no_stream" });
        expect(await again.catchUp()).toBe(head + 1);
        expect(counting.eventsRead()).toBe(1);
        await first.drop();
      });

      it("rebuilds from zero a projection whose version changed, and only that one", async () => {
        const p = prefix();
        const first = await openProjections(store, ALL_PROJECTIONS, { prefix: p });
        const head = await first.catchUp();
        const bumped = { ...contextsProjection, version: contextsProjection.version + 1 };
        const counting = countingReads(store);
        const again = await openProjections(counting.store, [bumped, ...ALL_PROJECTIONS.slice(1)], { prefix: p });
        expect(counting.eventsRead()).toBe(head);
        const cps = await again.checkpoints();
        expect(cps.find((c) => c.name === "contexts")).toEqual({
          name: "contexts",
          version: bumped.version,
          position: head,
        });
        expect(await again.snapshot()).toEqual(await first.snapshot());
        await first.drop();
      });
    });

    it("follows the log: events committed after follow() reach the projections without a catchUp call", async () => {
      const engine = await openProjections(store, ALL_PROJECTIONS, { prefix: prefix() });
      const stop = engine.follow();
      try {
        const id = `follow-${tables}`;
        await store.append(id, [created(id)], { expectedVersion: "no_stream" });
        expect(
          await eventually(() => engine.contexts.get(id), 10_000, "the followed event in the projection"),
        ).toMatchObject({ id, status: "idle" });
      } finally {
        stop();
        await engine.drop();
      }
    });

    it("when another engine on the same tables moved the checkpoints first, drops its own fold and goes on from theirs", async () => {
      const p = prefix();
      const mine = await openProjections(store, ALL_PROJECTIONS, { prefix: p });
      const theirs = await openProjections(store, ALL_PROJECTIONS, { prefix: p });
      await store.append("ctx-race-1", [created("ctx-race-1")], { expectedVersion: "no_stream" });
      const head = await theirs.catchUp();
      await store.append("ctx-race-2", [created("ctx-race-2")], { expectedVersion: "no_stream" });
      // `mine` still believes the checkpoints are where it opened them; its first write is refused.
      expect(await mine.catchUp()).toBe(head + 1);
      expect((await mine.checkpoints()).map((c) => c.position)).toEqual(ALL_PROJECTIONS.map(() => head + 1));
      expect(await mine.snapshot()).toEqual(await mine.rebuildInto(`${p}check_`));
      expect(await theirs.catchUp()).toBe(head + 1);
      await mine.drop();
    });

    it("verify() finds a stored row that differs from a rebuild, and passes otherwise", async () => {
      const p = prefix();
      const engine = await openProjections(store, ALL_PROJECTIONS, { prefix: p });
      await store.append("ctx-verify", [created("ctx-verify")], { expectedVersion: "no_stream" });
      expect(await engine.verify()).toMatchObject({ ok: true, mismatches: [] });
      await store.sql.query(
        `UPDATE ${p}projection_state SET state = jsonb_set(state, '{name}', '"tampered"') WHERE projection = 'contexts' AND key = 'ctx-verify'`,
      );
      const result = await engine.verify();
      expect(result.ok).toBe(false);
      expect(result.mismatches.map((m) => [m.projection, m.key])).toEqual([["contexts", "ctx-verify"]]);
      await engine.drop();
    });

    describe("queries, given a root with two children and a parallel job", () => {
      const root = "q-root" as ContextId;
      const a = "q-a" as ContextId;
      const b = "q-b" as ContextId;
      const run = "q-run" as RunId;
      const job = "callsubordin-0000abcd" as JobId;
      let engine: Awaited<ReturnType<typeof openProjections>>;

      beforeAll(async () => {
        engine = await openProjections(store, ALL_PROJECTIONS, { prefix: prefix() });
        await store.append(root, [created(root)], { expectedVersion: "no_stream" });
        await store.append(a, [created(a, root)], { expectedVersion: "no_stream" });
        await store.append(b, [created(b, root, job)], { expectedVersion: "no_stream" });
        await store.append(
          root,
          [
            { type: "MessageReceived", data: { runId: run, text: "go", sender: "user" } },
            { type: "RunStarted", data: { runId: run, model: "m", superior: null } },
            { type: "ModelCalled", data: { runId: run, step: 0, attempt: 0, model: "m" } },
            {
              type: "ModelReplied",
              data: {
                runId: run,
                step: 0,
                text: null,
                toolCalls: [{ id: "p1", name: "parallel", arguments: { tool_calls: [] } }],
                usage: { inputTokens: 10, outputTokens: 3 },
              },
            },
            {
              type: "ParallelJobStarted",
              data: {
                runId: run,
                toolCallId: "p1",
                jobId: job,
                toolName: "call_subordinate",
                arguments: { message: "x" },
              },
            },
            {
              type: "SubordinateCalled",
              data: { runId: run, toolCallId: "p1", childContextId: b, fresh: true, jobId: job },
            },
          ],
          { expectedVersion: 1 },
        );
        await store.append(
          b,
          [
            {
              type: "ModelReplied",
              data: {
                runId: "b-run" as RunId,
                step: 0,
                text: "hi",
                toolCalls: [],
                usage: { inputTokens: 5, outputTokens: 7 },
              },
            },
          ],
          {
            expectedVersion: 1,
          },
        );
        await store.append(
          a,
          [
            {
              type: "ModelReplied",
              data: { runId: "a-run" as RunId, step: 0, text: "yo", toolCalls: [], usage: null },
            },
          ],
          { expectedVersion: 1 },
        );
        await store.append(
          root,
          [
            {
              type: "ParallelJobFinished",
              data: { runId: run, jobId: job, status: "success", result: "done", error: null, contextId: b },
            },
            { type: "RunStopped", data: { runId: run, by: "user" } },
          ],
          { expectedVersion: 7 },
        );
        await engine.catchUp();
      });

      it("gets a context and lists them by root and status", async () => {
        expect(await engine.contexts.get(root)).toMatchObject({
          id: root,
          status: "stopped",
          version: 9,
          kind: "root",
        });
        expect(await engine.contexts.get("nope")).toBeNull();
        expect((await engine.contexts.list({ rootContextId: root })).map((c) => c.id)).toEqual([root, a, b]);
        expect((await engine.contexts.list({ rootContextId: root, status: "stopped" })).map((c) => c.id)).toEqual([
          root,
        ]);
        expect((await engine.contexts.list({ status: "idle" })).map((c) => c.id)).toEqual(
          expect.arrayContaining([a, b]),
        );
      });

      it("lists children in creation order and the roots", async () => {
        expect(await engine.tree.children(root)).toEqual([
          { contextId: a, agentNumber: 1, slot: "default", kind: "subordinate" },
          { contextId: b, agentNumber: 1, slot: job, kind: "subordinate" },
        ]);
        expect(await engine.tree.children(a)).toEqual([]);
        const roots = await engine.tree.roots();
        expect(roots).toContain(root);
        expect(roots).not.toContain(a);
      });

      it("gives the history with the dangling parallel call closed by the stop", async () => {
        expect(await engine.transcript.history(root)).toEqual([
          { role: "user", content: "go" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "p1", type: "function", function: { name: "parallel", arguments: '{"tool_calls":[]}' } },
            ],
          },
          { role: "tool", tool_call_id: "p1", content: NOT_RUN_RESULT },
        ]);
      });

      it("sums usage per context and rolls it up per root, each context once", async () => {
        expect(await engine.usage.of(b)).toMatchObject({
          inputTokens: 5,
          outputTokens: 7,
          modelCalls: 1,
          rootContextId: root,
        });
        expect(await engine.usage.rollup(root)).toEqual({
          rootContextId: root,
          inputTokens: 15,
          outputTokens: 10,
          modelCalls: 3,
          contexts: 3,
        });
      });

      it("shows the job by id and by its parent context", async () => {
        const view = await engine.jobs.get(job);
        expect(view).toMatchObject({
          jobId: job,
          contextId: root,
          status: "success",
          result: "done",
          childContextId: b,
          toolName: "call_subordinate",
          arguments: { message: "x" },
        });
        expect(view!.finishedAt).not.toBeNull();
        expect(await engine.jobs.ofContext(root)).toEqual([view]);
      });
    });
  });
}

function created(
  id: string,
  parent: string | null = null,
  slot: string | null = parent ? "default" : null,
): DomainEvent {
  return {
    type: "ContextCreated",
    data: {
      contextId: id as ContextId,
      name: id,
      label: id,
      profile: "default",
      project: null,
      agentNumber: parent ? 1 : 0,
      depth: parent ? 1 : 0,
      kind: parent ? "subordinate" : "root",
      parentContextId: parent as ContextId | null,
      parentAgentNumber: parent ? 0 : null,
      rootContextId: (parent ?? id) as ContextId,
      slot,
      modelOverride: null,
    },
  };
}

/** The same store, counting the events its readers hand out (to check what a catch-up reads). */
function countingReads(inner: EventStore) {
  let read = 0;
  const wrapped: EventStore = Object.create(inner, {
    readAll: {
      value: async (after?: number, limit?: number) => {
        const page = await inner.readAll(after, limit);
        read += page.length;
        return page;
      },
    },
    sql: { get: () => inner.sql },
    settledPosition: { value: inner.settledPosition ? () => inner.settledPosition!() : undefined },
  });
  return { store: wrapped, eventsRead: () => read };
}

describe("given a row written around the store (raw SQL) that passes the cheap read check but not its schema", () => {
  let store: EventStore;
  let bad: number;
  beforeAll(async () => {
    store = await freshPgliteStore();
    await store.append("ctx-raw", [created("ctx-raw")], { expectedVersion: "no_stream" });
    // toolCalls is an array, as the read check asks, but holds null where a tool call belongs.
    const { rows } = await store.sql.query<{ global_position: string | number }>(
      `INSERT INTO events (event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
       VALUES (gen_random_uuid(), 'ctx-raw', 2, 'ModelReplied', 1,
         '{"runId":"r1","step":0,"text":null,"toolCalls":[null],"usage":null}'::jsonb,
         '{"correlationId":null,"causationId":null,"actor":null}'::jsonb, now())
       RETURNING global_position`,
    );
    bad = Number(rows[0]!.global_position);
  });
  afterAll(async () => {
    await store?.close();
  });

  it("reads it (rows are trusted on read) but verify() refuses it, naming its position", async () => {
    expect((await store.readStream("ctx-raw")).map((e) => e.type)).toEqual(["ContextCreated", "ModelReplied"]);
    const engine = await openProjections(store, [contextsProjection], { prefix: "raw_" });
    const error = await engine.verify().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventDecodeError);
    expect(error).toMatchObject({ globalPosition: bad, eventType: "ModelReplied" });
    await engine.drop();
  });

  it("fails a catch-up whose fold throws on it with EventDecodeError naming its position, not a TypeError", async () => {
    const error = await openProjections(store, ALL_PROJECTIONS, { prefix: "raw_all_" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventDecodeError);
    expect((error as Error).message).toMatch(new RegExp(`global_position ${bad} .*toolCalls`));
  });
});
