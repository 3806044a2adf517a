// Closing the runtime while a message is starting its run: the sender's promise settles (it used to wait
// forever), and the log never shows a run open that nothing will end. Each test has a short timeout:
// before the fix, the sender waited forever.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { createRuntime, RuntimeError } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/models/scripted.ts";
import { waitFor } from "xstate";
import { gate } from "../support/async.ts";
import { freshPgliteStore } from "../support/pglite.ts";

let base: EventStore;
beforeAll(async () => {
  base = await freshPgliteStore();
});
afterAll(async () => {
  await base.close();
});

/** `base`, whose appends holding an event of `type` wait for `held` once they have landed, after `landed` resolves. */
const holdingAppendsOf = (type: string) => {
  const landed = gate();
  const held = gate();
  const store = new Proxy(base, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop !== "append" || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return async (streamId: string, events: NewEvent[], opts: unknown) => {
        const result = await (value as (...args: unknown[]) => Promise<unknown>).call(target, streamId, events, opts);
        if (events.some((e) => e.type === type)) {
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
    const { store, landed, held } = holdingAppendsOf("RunStarted");
    const rt = await createRuntime({ store, model: model() });
    const { id } = await rt.createContext({ name: "closing" });
    const sending = rt.send(id, "hello");
    await landed.promise;
    await rt.close();
    held.open();
    const outcome = await sending;
    expect(outcome.status).toBe("failed");
    expect(await typesOf(id)).toEqual([
      "ContextCreated",
      "MessageReceived",
      "RunStarted",
      "ModelCalled",
      "RunInterrupted",
    ]);
  });
});

describe("when the runtime closes while a message waits for a run that is being stopped", () => {
  it(
    "rejects the waiting send as closed (it used to wait forever on the stopped machine), and the stop answers with the run's end",
    { timeout: 10_000 },
    async () => {
      const { store, landed, held } = holdingAppendsOf("RunStopped");
      const calling = gate();
      const rt = await createRuntime({
        store,
        model: scriptedModel(() => (calling.open(), new Promise<never>(() => undefined))),
      });
      const { id } = await rt.createContext({ name: "stopping" });
      const first = rt.send(id, "work");
      await calling.promise;
      const stopping = rt.stop(id);
      await landed.promise;
      // The stop's end is held: the machine stays in `stopping`, and the next message waits for it to rest.
      const second = rt.send(id, "next");
      await waitFor(rt.actor(id)!, (s) => s.matches({ running: "stopping" }));
      // Close stops the machine at once; the message waits behind the stop, which waits for its held append.
      const closing = rt.close();
      held.open();
      await expect(second).rejects.toMatchObject({ name: "RuntimeError", reason: "closed" });
      await closing;
      // The stop recorded its run's end before the close: it answers with it.
      expect((await stopping)?.status).toBe("stopped");
      await Promise.allSettled([first]);
    },
  );
});
