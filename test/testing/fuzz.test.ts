// Fuzz: thousands of malformed tool calls and model replies through the real loop on PGlite; nothing crashes, every call gets an answer the model can act on, the log stays decodable.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { createRuntime, openPgliteStore, type EventStore, type ModelTurn, type Runtime } from "../../src/index.ts";
import {
  checkInvariants,
  malformedTurnArb,
  reply,
  scriptedModel,
  type ScriptedModel,
} from "../../src/testing/index.ts";

const targetCalls = Number(process.env.ACTORZERO_FUZZ_CALLS ?? 3000);
const MAX_CALLS_PER_TURN = 8;

let store: EventStore;
let rt: Runtime;
let model: ScriptedModel;
/** The malformed turn the next run's first model call gets; every later call answers plainly. */
let next: ModelTurn | null = null;
let answers = 0;

beforeAll(async () => {
  store = await openPgliteStore();
  model = scriptedModel((req) => {
    if (req.agentNumber === 0 && next) {
      const turn = next;
      next = null;
      return turn;
    }
    return reply(`done #${++answers}`);
  });
  rt = await createRuntime({ store, model, limits: { retryBaseMs: 1, retryMaxMs: 2, passivateAfterMs: 50 } });
});
afterAll(async () => {
  await rt.close();
  await store.close();
});

const rawCalls = (turn: ModelTurn) => (turn.toolCalls ?? []) as unknown[];

const withTimeout = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<"timed out">((r) => setTimeout(() => r("timed out"), ms))]);

describe("given model turns full of malformed tool calls (bad JSON, wrong types, unknown tools, odd ids, huge and unicode strings, text that is not a string)", () => {
  let fed = 0;
  let rootId = "";

  it(`never crashes the runtime, and answers every call with a tool message (${targetCalls} calls)`, async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(malformedTurnArb(MAX_CALLS_PER_TURN), async (turn) => {
        // A new root now and then keeps histories (and so requests) short.
        if (runs++ % 5 === 0) rootId = (await rt.createContext({ name: "fuzz" })).id;
        // Only this run's requests are kept: the scripted model copies every request it gets.
        model.requests.length = 0;
        next = turn;
        const outcome = await rt.send(rootId, `malformed turn #${runs}`);
        fed += rawCalls(turn).length;

        // The run ends normally: the model gets to answer after its bad turn (or a valid `response` in it ends the run).
        expect(outcome.status).toBe("completed");
        const events = (await rt.events({ contextId: rootId })).filter(
          (e) => "runId" in e.data && e.data.runId === outcome.runId,
        );
        const replied = events.find((e) => e.type === "ModelReplied");
        expect(replied?.type === "ModelReplied" && replied.data.toolCalls.length).toBe(rawCalls(turn).length);
        // Every call was answered, as a result or a repairable error, never a fatal one.
        const answered = events.filter((e) => e.type === "ToolReturned" || e.type === "ToolFailed");
        expect(answered).toHaveLength(rawCalls(turn).length);
        for (const e of answered) if (e.type === "ToolFailed") expect(e.data.repairable).toBe(true);
        // … and the model saw each answer as a tool message right after its own message.
        const seen = model.requests[1];
        if (seen) {
          const msgs = seen.messages;
          const lastAssistant = msgs.map((m) => m.role).lastIndexOf("assistant");
          const toolMsgs = msgs.slice(lastAssistant + 1).filter((m) => m.role === "tool");
          expect(toolMsgs).toHaveLength(rawCalls(turn).length);
          for (const m of toolMsgs) expect(typeof m.content).toBe("string");
        }
      }),
      { numRuns: Math.ceil(targetCalls / ((1 + MAX_CALLS_PER_TURN) / 2)) },
    );
    expect(fed).toBeGreaterThanOrEqual(targetCalls * 0.8);
  }, 600_000);

  it("leaves a log that decodes from the first event to the last, and whose projections rebuild to the live ones", async () => {
    let count = 0;
    for await (const _ of store.iterateAll(0, 500)) count++;
    const { rows } = await store.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM events");
    expect(count).toBe(rows[0]!.n);
    const violations = await checkInvariants(rt, { rebuild: "full" });
    expect(violations).toEqual([]);
  }, 300_000);

  it("given a reply with a NUL character, a lone surrogate or a non-string tool call id, the run still ends and the log stays decodable", async () => {
    const turns: unknown[] = [
      { toolCalls: [{ id: "nul-1", name: "no_such_tool", arguments: "a\u0000b" }] },
      { toolCalls: [{ id: "sur-1", name: "no_such_tool", arguments: "\uD800" }] },
      { toolCalls: [{ id: ["a"], name: "response", arguments: "{}" }] },
      { toolCalls: [{ id: "emoji", name: "response", arguments: "😀" }] },
    ];
    const queue = [...turns] as ModelTurn[];
    const own = await createRuntime({
      store,
      model: scriptedModel(() => queue.shift() ?? reply("fine")),
      limits: { passivateAfterMs: 50 },
    });
    for (let i = 0; i < turns.length; i++) {
      const ctx = await own.createContext({ name: "unstorable" });
      const outcome = await withTimeout(own.send(ctx.id, "go"), 3000);
      expect(outcome).not.toBe("timed out");
      expect((await own.events({ contextId: ctx.id })).at(-1)!.type).toMatch(/^Run(Completed|Failed)$/);
    }
    await own.close();
  }, 30_000);
});
