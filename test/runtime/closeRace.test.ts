// Closing the runtime while a message is starting its run: the sender's promise settles (it used to wait
// forever), and the log never shows a run open that nothing will end. Each test has a short timeout:
// before the fix, the sender waited forever.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { createRuntime, RuntimeError } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { gate } from "../support/async.ts";
import { freshPgliteStore } from "../support/pglite.ts";

let base: EventStore;
beforeAll(async () => {
  base = await freshPgliteStore();
});
afterAll(async () => {
  await base.close();
});

/** `base`, whose appends that start a run wait for `held` once they have landed, after `landed` resolves. */
const holdingRunStarts = () => {
  const landed = gate();
  const held = gate();
  const store = new Proxy(base, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop !== "append" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
      return async (streamId: string, events: NewEvent[], opts: unknown) => {
        const result = await (value as (...args: unknown[]) => Promise<unknown>).call(target, streamId, events, opts);
        if (events.some((e) => e.type === "RunStarted")) {
          landed.open();
          await held.promise;
        }
        return result;
      };
    },
  });
  return { store, landed, held };
};

const model = () => scriptedModel(() => ({ text: "hi" }));
const typesOf = async (id: string) => (await base.readStream(id)).map((e) => e.type);

describe("when the runtime closes right after a message is sent, before its run starts", () => {
  it("rejects the send as closed and records nothing of a run", { timeout: 10_000 }, async () => {
    const rt = await createRuntime({ store: base, model: model() });
    const { id } = await rt.createContext({ name: "closing" });
    const sending = rt.send(id, "hello");
    await rt.close();
    await expect(sending).rejects.toBeInstanceOf(RuntimeError);
    await expect(sending).rejects.toMatchObject({ reason: "closed" });
    expect(await typesOf(id)).toEqual(["ContextCreated"]);
  });
});

describe("when the runtime closes while the run's start is being appended", () => {
  it("answers the send with the run interrupted, and the log shows the run ended", { timeout: 10_000 }, async () => {
    const { store, landed, held } = holdingRunStarts();
    const rt = await createRuntime({ store, model: model() });
    const { id } = await rt.createContext({ name: "closing" });
    const sending = rt.send(id, "hello");
    await landed.promise;
    await rt.close();
    held.open();
    const outcome = await sending;
    expect(outcome.status).toBe("failed");
    expect(await typesOf(id)).toEqual(["ContextCreated", "MessageReceived", "RunStarted", "ModelCalled", "RunInterrupted"]);
  });
});
