// Run leases on one PostgreSQL log (DESIGN §9): two runtimes with their own stores, as two processes would be.
import { describe, expect, it } from "vitest";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { EventStore } from "../../src/events/store.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import type { ModelTurn } from "../../src/models/port.ts";
import { createRuntime, internalsOf, RuntimeError, type Runtime } from "../../src/runtime/runtime.ts";
import { checkLogShape } from "../../src/testing/invariants.ts";
import { checkOneRunAtATime } from "../../src/testing/runInvariants.ts";
import { eventually, settledWithin } from "../support/async.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const TTL_MS = 500;

/** A model call that waits until the test opens it; `called` resolves once the call has come. */
const gate = () => {
  let open!: (turn: ModelTurn) => void;
  let arrived!: () => void;
  const reply = new Promise<ModelTurn>((r) => (open = r));
  const called = new Promise<void>((r) => (arrived = r));
  return { reply, called, open, arrived };
};

const busyRefusal = async (p: Promise<unknown>): Promise<RuntimeError> => {
  const e = await p.then(
    () => {
      throw new Error("expected the send to be refused as busy");
    },
    (e: unknown) => e,
  );
  expect(e).toBeInstanceOf(RuntimeError);
  expect((e as RuntimeError).reason).toBe("busy");
  return e as RuntimeError;
};

/** The lease's expiry as the database holds it (0 when there is none). */
const leaseExpiry = async (store: EventStore, id: string) => {
  const { rows } = await store.sql.query<{ expires_at: Date }>(
    `SELECT expires_at FROM context_leases WHERE context_id = $1`,
    [id],
  );
  return rows[0] ? new Date(rows[0].expires_at).getTime() : 0;
};

/** Runtime A ("doomed") with a context whose model call never answers: A will die in that call. */
const doomedRuntime = async (url: string) => {
  const storeA = await openPostgresStore({ url });
  const held = gate();
  const rtA: Runtime = await createRuntime({
    store: storeA,
    model: scriptedModel(() => {
      held.arrived();
      return held.reply; // never opened: A dies in this call
    }),
    owner: "doomed",
    limits: { leaseTtlMs: TTL_MS },
  });
  return { storeA, rtA, held, ctx: await rtA.createContext({ name: "orphan" }) };
};

const leaseOwners = async (store: EventStore, id: string) =>
  (await store.sql.query<{ owner: string }>(`SELECT owner FROM context_leases WHERE context_id = $1`, [id])).rows.map(
    (r) => r.owner,
  );

const streamTypes = async (store: EventStore, id: string) => (await store.readStream(id)).map((e) => e.type);

describeWithPostgres("run leases between runtimes on one PostgreSQL log", () => {
  const db = usePostgresDatabase("actorzero_leases");

  describe("while runtime A drives a context", () => {
    it("refuses B's send as busy naming A's owner, B's open and sweeps leave A's run alone, and after it B continues with A's history", async () => {
      const url = await db.fresh();
      const storeA = await openPostgresStore({ url });
      const held = gate();
      const modelA = scriptedModel(() => {
        held.arrived();
        return held.reply;
      });
      const rtA = await createRuntime({ store: storeA, model: modelA, owner: "alpha", limits: { leaseTtlMs: TTL_MS } });
      const ctx = await rtA.createContext({ name: "shared" });
      const first = rtA.send(ctx.id, "first question, asked of A");
      await held.called;

      // B opens while A's run is open: its recovery at open must not take A's live run for a crashed one.
      const storeB = await openPostgresStore({ url });
      const modelB = scriptedModel(() => ({ text: "B's answer" }));
      const rtB = await createRuntime({ store: storeB, model: modelB, owner: "beta", limits: { leaseTtlMs: TTL_MS } });
      const refused = await busyRefusal(rtB.send(ctx.id, "second question, asked of B"));
      expect(refused.message).toContain("alpha");
      expect(refused.message).toContain(ctx.id);

      // Several lease lifetimes pass (seen as A's renewals moving the expiry past three TTLs from now); A renews,
      // so B's sweep after them interrupts nothing.
      const horizon = Date.now() + TTL_MS * 3;
      await eventually(async () => (await leaseExpiry(storeB, ctx.id)) > horizon, 10_000, "A's lease renewals");
      await internalsOf(rtB).recoverInterruptedRuns();
      expect(await streamTypes(storeB, ctx.id)).not.toContain("RunInterrupted");
      expect((await rtB.context(ctx.id))?.status).toBe("running");
      await busyRefusal(rtB.send(ctx.id, "second question, asked of B"));
      expect(modelB.requests).toHaveLength(0);

      held.open({ text: "A's answer to the first question" });
      expect(await first).toMatchObject({ status: "completed", response: "A's answer to the first question" });
      // A's run's end in the log freed its lease (the row stays; see "after a run's send has settled" below).

      const second = await rtB.send(ctx.id, "second question, asked of B");
      expect(second).toMatchObject({ status: "completed", response: "B's answer" });
      // B's model got A's exchange: B's actor caught up with the facts A appended.
      const sent = modelB.requests[0]!.messages.map((m) => ({ role: m.role, content: m.content }));
      expect(sent).toContainEqual({ role: "user", content: "first question, asked of A" });
      expect(sent).toContainEqual({ role: "assistant", content: "A's answer to the first question" });
      expect(sent.at(-1)).toEqual({ role: "user", content: "second question, asked of B" });

      const stream = await storeB.readStream(ctx.id);
      expect(checkOneRunAtATime(ctx.id, stream)).toEqual([]);
      expect(checkLogShape(new Map([[ctx.id, stream]]))).toEqual([]);
      expect(stream.filter((e) => e.type === "RunCompleted")).toHaveLength(2);
      expect(stream.map((e) => e.type)).not.toContain("RunInterrupted");

      // And back: A, whose actor is now behind the log, continues with B's exchange too.
      // (A's gate is open now: it answers at once.)
      expect(await rtA.send(ctx.id, "third question, asked of A again")).toMatchObject({ status: "completed" });
      const seenByA = modelA.requests.at(-1)!.messages.map((m) => m.content);
      expect(seenByA).toContain("B's answer");
      expect(checkOneRunAtATime(ctx.id, await storeA.readStream(ctx.id))).toEqual([]);

      await rtB.close();
      await rtA.close();
      await storeB.close();
      await storeA.close();
    });
  });

  describe("when a runtime runs a context again right after its previous run ended", () => {
    // A run's end releases its lease before the next run of the context may acquire it.
    it("keeps the new run's lease, so another runtime is still refused as busy", async () => {
      const url = await db.fresh();
      const storeA = await openPostgresStore({ url });
      let held = gate();
      const rtA = await createRuntime({
        store: storeA,
        model: scriptedModel(() => {
          held.arrived();
          return held.reply;
        }),
        owner: "alpha",
        limits: { leaseTtlMs: TTL_MS },
      });
      const ctx = await rtA.createContext({ name: "twice" });
      held.open({ text: "one" });
      expect(await rtA.send(ctx.id, "first")).toMatchObject({ status: "completed" });
      held = gate();
      const second = rtA.send(ctx.id, "second");
      await held.called;

      const { rows } = await storeA.sql.query<{ owner: string }>(
        `SELECT owner FROM context_leases WHERE context_id = $1`,
        [ctx.id],
      );
      const storeB = await openPostgresStore({ url });
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => ({ text: "B" })),
        owner: "beta",
        limits: { leaseTtlMs: TTL_MS },
      });
      try {
        expect(rows, "the running context has no lease").toEqual([{ owner: "alpha" }]);
        await busyRefusal(rtB.send(ctx.id, "B cuts in"));
      } finally {
        held.open({ text: "two" });
        await settledWithin(second, 2000);
        await rtB.close();
        await storeB.close();
        await rtA.close();
        await storeA.close();
      }
    });
  });

  describe("after a run's send has settled", () => {
    // A send settles only once its run's lease is released.
    it("lets another runtime send to the context at once", async () => {
      const url = await db.fresh();
      const storeA = await openPostgresStore({ url });
      const rtA = await createRuntime({
        store: storeA,
        model: scriptedModel(() => ({ text: "A done" })),
        owner: "alpha",
        limits: { leaseTtlMs: TTL_MS },
      });
      const storeB = await openPostgresStore({ url });
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => ({ text: "B done" })),
        owner: "beta",
        limits: { leaseTtlMs: TTL_MS },
      });
      try {
        const ctx = await rtA.createContext({ name: "handed over" });
        expect(await rtA.send(ctx.id, "A's turn")).toMatchObject({ status: "completed" });
        expect(await rtB.send(ctx.id, "B's turn")).toMatchObject({ status: "completed", response: "B done" });
      } finally {
        await rtB.close();
        await rtA.close();
        await storeB.close();
        await storeA.close();
      }
    });
  });

  describe("when a sweep finds a context unowned and this runtime starts a run of it before the sweep takes the lease", () => {
    // A sweep goes through the context's command queue, so it never touches a run this process started.
    it("leaves the new run's lease in place, so another runtime is still refused as busy", async () => {
      const url = await db.fresh();
      // Hold the sweep's "which are unowned" query before it runs and again before it returns.
      let armed = false;
      const reached = gate();
      const runQuery = gate();
      const ran = gate();
      const returnRows = gate();
      const raw = await openPostgresStore({ url });
      const sql = {
        ...raw.sql,
        query: async <R>(text: string, params?: unknown[]) => {
          if (!armed || !text.includes("AS x(id)")) return raw.sql.query<R>(text, params);
          armed = false;
          reached.arrived();
          await runQuery.reply;
          const result = await raw.sql.query<R>(text, params);
          ran.arrived();
          await returnRows.reply;
          return result;
        },
      } as EventStore["sql"];
      const storeA = new Proxy(raw, {
        get: (target, prop) => {
          if (prop === "sql") return sql;
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const heldA = gate();
      const rtA = await createRuntime({
        store: storeA,
        model: scriptedModel(() => {
          heldA.arrived();
          return heldA.reply;
        }),
        owner: "alpha",
        limits: { leaseTtlMs: 60_000 }, // no timed sweep: the test runs the one it needs
      });
      const storeB = await openPostgresStore({ url });
      const heldB = gate();
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => {
          heldB.arrived();
          return heldB.reply;
        }),
        owner: "beta",
        limits: { leaseTtlMs: 60_000 },
      });
      const ctx = await rtB.createContext({ name: "contended" });
      const runOfB = rtB.send(ctx.id, "B's run");
      await heldB.called;

      // A's sweep sees the context running (B's run), not in flight in A.
      armed = true;
      const sweep = internalsOf(rtA).recoverInterruptedRuns();
      await reached.called;
      // B's run ends, and its end in the log frees its lease; the sweep then finds the context unowned.
      heldB.open({ text: "B done" });
      await runOfB;
      runQuery.open({});
      await ran.called;
      // Before the sweep takes the lease, A runs the context itself.
      const runOfA = rtA.send(ctx.id, "A's run");
      await heldA.called;
      returnRows.open({});
      await sweep;

      try {
        expect(await leaseOwners(storeB, ctx.id), "A's running context lost its lease to A's own sweep").toEqual([
          "alpha",
        ]);
        await busyRefusal(rtB.send(ctx.id, "B cuts in"));
      } finally {
        heldA.open({ text: "A done" });
        await settledWithin(runOfA, 2000);
        await settledWithin(rtA.close(), 2000);
        await settledWithin(rtB.close(), 2000);
        await raw.close();
        await storeB.close();
      }
    });
  });

  describe("when another process records the end of a run that is still going", () => {
    // A run whose stream another process ended fails here too: its send settles and the context runs again.
    it("ends the run in its own process too, so its send settles and the next send runs", async () => {
      const url = await db.fresh();
      const store = await openPostgresStore({ url });
      const held = gate();
      let calls = 0;
      const rt = await createRuntime({
        store,
        model: scriptedModel(() => {
          calls += 1;
          if (calls > 1) return { text: "running again" };
          held.arrived();
          return held.reply;
        }),
        owner: "alpha",
        limits: { leaseTtlMs: TTL_MS },
      });
      const ctx = await rt.createContext({ name: "cut short" });
      const first = rt.send(ctx.id, "first");
      await held.called;
      // What a wrongful takeover (or an operator) writes: the run's end, from outside this runtime.
      const stream = await store.readStream(ctx.id);
      const runId = (stream.find((e) => e.type === "RunStarted")!.data as { runId: string }).runId;
      await store.append(ctx.id, [{ type: "RunInterrupted", data: { runId: runId as never } }], {
        expectedVersion: stream.length,
      });
      held.open({ text: "too late" });
      try {
        expect(await settledWithin(first, 3000), "the send of the run cut short never settled").toBe("settled");
        const next = rt.send(ctx.id, "second");
        expect(await settledWithin(next, 3000), "the next send never settled").toBe("settled");
        expect(await next).toMatchObject({ status: "completed", response: "running again" });
        expect(checkOneRunAtATime(ctx.id, await store.readStream(ctx.id))).toEqual([]);
      } finally {
        await settledWithin(rt.close(), 2000);
        await store.close();
      }
    });
  });

  describe("when the runtime driving a context dies mid-run", () => {
    it("keeps the context busy until the lease expires, then the survivor's sweep records RunInterrupted, and the context runs again", async () => {
      const url = await db.fresh();
      const { storeA, rtA, held, ctx } = await doomedRuntime(url);
      void rtA.send(ctx.id, "work until you die").catch(() => undefined);
      await held.called;

      const storeB = await openPostgresStore({ url });
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => ({ text: "picked up where A left off" })),
        owner: "survivor",
        recovery: "interrupt",
        limits: { leaseTtlMs: TTL_MS },
      });

      // A dies: its connections close, so nothing renews its lease any more (rtA is abandoned, not closed).
      await storeA.close();
      const killedAt = Date.now();
      const { rows } = await storeB.sql.query<{ owner: string; expires_at: Date }>(
        `SELECT owner, expires_at FROM context_leases WHERE context_id = $1`,
        [ctx.id],
      );
      expect(rows[0]?.owner).toBe("doomed");
      const expiresAt = new Date(rows[0]!.expires_at).getTime();
      // Renewed every TTL/3, so the lease outlives its owner by at least two thirds of the TTL.
      expect(expiresAt - killedAt).toBeGreaterThan(TTL_MS / 2);

      // Before expiry: the dead owner still holds the context.
      const early = await busyRefusal(rtB.send(ctx.id, "too early"));
      expect(early.message).toContain("doomed");
      expect(await streamTypes(storeB, ctx.id)).not.toContain("RunInterrupted");

      // The survivor's sweep (every TTL) interrupts the run, after expiry and within a few TTLs.
      const interrupted = await eventually(
        async () => (await storeB.readStream(ctx.id)).find((e) => e.type === "RunInterrupted"),
        TTL_MS * 6,
        "the survivor's sweep to interrupt the dead owner's run",
      );
      const interruptedAt = Date.parse(interrupted!.recordedAt);
      expect(interruptedAt).toBeGreaterThanOrEqual(expiresAt);
      expect(interruptedAt - killedAt).toBeLessThan(TTL_MS * 4);
      expect(await rtB.context(ctx.id)).toMatchObject({ status: "failed", failure: { reason: "interrupted" } });

      expect(await rtB.send(ctx.id, "carry on")).toMatchObject({
        status: "completed",
        response: "picked up where A left off",
      });
      const stream = await storeB.readStream(ctx.id);
      expect(checkOneRunAtATime(ctx.id, stream)).toEqual([]);
      expect(stream.filter((e) => e.type === "RunInterrupted")).toHaveLength(1);

      await rtB.close();
      await storeB.close();
    });

    it("with recovery 'resume', the survivor's sweep takes the run over once the lease expires and makes the cut-off call again, as the same run", async () => {
      const url = await db.fresh();
      const { storeA, rtA, held, ctx } = await doomedRuntime(url);
      const started = await rtA.start(ctx.id, "work until you die");
      void started.ended.catch(() => undefined);
      await held.called;

      const storeB = await openPostgresStore({ url });
      const modelB = scriptedModel(() => ({ text: "picked up where A left off" }));
      const rtB = await createRuntime({
        store: storeB,
        model: modelB,
        owner: "survivor",
        recovery: "resume",
        limits: { leaseTtlMs: TTL_MS },
      });
      // B's open found the run owned (A lives): it left it alone.
      expect(modelB.requests).toHaveLength(0);

      // A dies: its connections close, so nothing renews its lease any more (rtA is abandoned, not closed).
      await storeA.close();
      const completed = await eventually(
        async () => (await storeB.readStream(ctx.id)).find((e) => e.type === "RunCompleted"),
        TTL_MS * 8,
        "the survivor's sweep to resume the dead owner's run",
      );
      expect(completed, "the survivor's sweep never resumed the dead owner's run").toMatchObject({
        data: { runId: started.runId, response: "picked up where A left off" },
      });
      const stream = await storeB.readStream(ctx.id);
      expect(stream.filter((e) => e.type === "RunStarted")).toHaveLength(1);
      expect(stream.filter((e) => e.type === "ModelCalled").map((e) => e.data)).toMatchObject([
        { step: 1, attempt: 1 },
        { step: 1, attempt: 2 },
      ]);
      expect(stream.some((e) => e.type === "RunInterrupted")).toBe(false);
      expect(modelB.requests.map((r) => r.messages)).toEqual([
        [expect.objectContaining({ role: "system" }), { role: "user", content: "work until you die" }],
      ]);
      expect(checkOneRunAtATime(ctx.id, stream)).toEqual([]);
      await rtB.close();
      await storeB.close();
    });

    // The sweep skips only runs live in this process: an actor kept from an earlier, ended run of the same
    // context (passivateAfterMs is 30 s) must not hide the dead owner's run from it.
    it("interrupts it even when the survivor ran that context earlier and still holds its actor", async () => {
      const url = await db.fresh();
      const storeB = await openPostgresStore({ url });
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => ({ text: "B was here first" })),
        owner: "survivor",
        limits: { leaseTtlMs: TTL_MS },
        recovery: "interrupt",
      });
      const ctx = await rtB.createContext({ name: "shared" });
      expect(await rtB.send(ctx.id, "B's run, before A's")).toMatchObject({ status: "completed" });

      const storeA = await openPostgresStore({ url });
      const held = gate();
      const rtA = await createRuntime({
        store: storeA,
        model: scriptedModel(() => {
          held.arrived();
          return held.reply;
        }),
        owner: "doomed",
        limits: { leaseTtlMs: TTL_MS },
      });
      void rtA.send(ctx.id, "work until you die").catch(() => undefined);
      await held.called;
      await storeA.close();

      try {
        await eventually(
          async () => (await storeB.readStream(ctx.id)).find((e) => e.type === "RunInterrupted"),
          TTL_MS * 6,
          "the survivor's sweep to interrupt the dead owner's run",
        );
      } finally {
        await rtB.close();
        await storeB.close();
      }
    });

    it("lets a survivor's send take the context over once the lease expired, closing the dead run first", async () => {
      const url = await db.fresh();
      const storeA = await openPostgresStore({ url });
      const held = gate();
      const rtA = await createRuntime({
        store: storeA,
        model: scriptedModel(() => {
          held.arrived();
          return held.reply;
        }),
        owner: "doomed",
        limits: { leaseTtlMs: TTL_MS },
      });
      const ctx = await rtA.createContext({ name: "orphan" });
      void rtA.send(ctx.id, "work until you die").catch(() => undefined);
      await held.called;
      const storeB = await openPostgresStore({ url });
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => ({ text: "taken over" })),
        owner: "survivor",
        // B's sweeper runs every leaseTtlMs: a long one keeps it out, so the takeover here is the send's.
        limits: { leaseTtlMs: 60_000 },
      });
      await storeA.close();
      await busyRefusal(rtB.send(ctx.id, "too early"));

      // Busy until the dead owner's lease expires: the send is retried until it is taken.
      const result = await eventually(
        () =>
          rtB.send(ctx.id, "carry on").catch((e: unknown) => {
            if (e instanceof RuntimeError && e.reason === "busy") return undefined;
            throw e;
          }),
        TTL_MS * 6,
        "the survivor's send to take the context over",
      );
      expect(result).toMatchObject({ status: "completed", response: "taken over" });
      const types = await streamTypes(storeB, ctx.id);
      const at = types.indexOf("RunInterrupted");
      expect(at).toBeGreaterThan(0);
      expect(types.slice(at + 1)).toEqual([
        "MessageReceived",
        "RunStarted",
        "ModelCalled",
        "ModelReplied",
        "RunCompleted",
      ]);
      expect(checkOneRunAtATime(ctx.id, await storeB.readStream(ctx.id))).toEqual([]);
      await rtB.close();
      await storeB.close();
    });

    // The RunInterrupted a send writes is a run end past the version its lease was taken at, and a run's
    // end in the log frees a lease: the new run must hold the lease past it.
    it("keeps the lease of the run that closed the dead run, so a third runtime is refused as busy while it runs", async () => {
      const url = await db.fresh();
      const storeA = await openPostgresStore({ url });
      const dying = gate();
      const rtA = await createRuntime({
        store: storeA,
        model: scriptedModel(() => {
          dying.arrived();
          return dying.reply;
        }),
        owner: "doomed",
        limits: { leaseTtlMs: TTL_MS },
      });
      const ctx = await rtA.createContext({ name: "orphan" });
      void rtA.send(ctx.id, "work until you die").catch(() => undefined);
      await dying.called;
      // B opens while A's lease is live (so its open leaves the run alone) and sweeps too rarely to act:
      // the dead run is closed by B's own send, under the lease that send takes.
      const storeB = await openPostgresStore({ url });
      const held = gate();
      const rtB = await createRuntime({
        store: storeB,
        model: scriptedModel(() => {
          held.arrived();
          return held.reply;
        }),
        owner: "survivor",
        limits: { leaseTtlMs: 60_000 },
      });
      await storeA.close();
      const taken = await eventually(
        () =>
          rtB.start(ctx.id, "carry on").then(
            (started) => ({ ended: started.ended }),
            (e: unknown) => {
              if (e instanceof RuntimeError && e.reason === "busy") return undefined;
              throw e;
            },
          ),
        TTL_MS * 6,
        "the survivor to take the context over",
      );
      await held.called;
      expect(await streamTypes(storeB, ctx.id)).toContain("RunInterrupted");

      const storeC = await openPostgresStore({ url });
      const rtC = await createRuntime({
        store: storeC,
        model: scriptedModel(() => ({ text: "C ran it too" })),
        owner: "third",
        limits: { leaseTtlMs: 60_000 },
      });
      const refused = await busyRefusal(rtC.send(ctx.id, "me too"));
      expect(refused.message).toContain("survivor");

      held.open({ text: "taken over" });
      expect(await taken.ended).toMatchObject({ status: "completed", response: "taken over" });
      expect(checkOneRunAtATime(ctx.id, await storeB.readStream(ctx.id))).toEqual([]);
      await rtC.close();
      await rtB.close();
      await storeC.close();
      await storeB.close();
    });
  });
});
