import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPgliteStore } from "../support/pglite.ts";
import { gate } from "../support/async.ts";
import { createRuntime, scriptedModel, type EventStore } from "../../src/index.ts";

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store.close();
});

describe("given a run the runtime closes under it", () => {
  it("when its send settles, then the caller reads the same reason and words that rt.context() shows", async () => {
    const entered = gate();
    const never = gate<{ text: string }>();
    const rt = await createRuntime({
      store,
      model: scriptedModel(async () => {
        entered.open();
        return never.promise;
      }),
    });
    const ctx = await rt.createContext();
    const sent = rt.send(ctx.id, "go");
    await entered.promise;
    await rt.close();
    const outcome = await sent;
    const view = await rt.context(ctx.id);
    expect(outcome.status).toBe("failed");
    expect(view!.status).toBe("failed");
    expect(outcome.failure).toEqual(view!.failure);
  });
});
