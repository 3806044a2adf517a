// With no tracer provider passed and nothing registered with the OpenTelemetry API, runs take the path that
// never loads the API: no-op spans, a plain root context. (Its own file, so no earlier test has loaded the API
// into this module's state.)
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, ModelTurn } from "../../src/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { call, closeRuntimes, isFirstStep, runtimeWith } from "../delegation/support.ts";

afterEach(closeRuntimes);

/** A0 delegates to an A1, which delegates to an A2. */
const chainModel = (req: ModelRequest): ModelTurn => {
  if (req.agentNumber < 2 && isFirstStep(req))
    return call("call_subordinate", { message: `to A${req.agentNumber + 1}` });
  return { text: `answer of A${req.agentNumber}`, usage: { inputTokens: 1, outputTokens: 1 } };
};

describe("given no tracer provider and nothing registered with the API", () => {
  let store: EventStore;
  beforeAll(async () => {
    store = await freshPgliteStore({ inMemory: true });
  });
  afterAll(async () => {
    await store.close();
  });

  it("runs a two-level delegation to completion and stores no traceparent", async () => {
    expect(Symbol.for("opentelemetry.js.api.1") in globalThis).toBe(false);
    const { rt } = await runtimeWith(store, chainModel);
    const root = await rt.createContext();
    const outcome = await rt.send(root.id, "go");
    expect(outcome.status).toBe("completed");
    const starts = (await rt.events()).filter((e) => e.type === "RunStarted");
    expect(starts.length).toBe(3);
    expect(starts.every((e) => e.metadata.traceparent === undefined)).toBe(true);
  });
});
