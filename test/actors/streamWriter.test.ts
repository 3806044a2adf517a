// The stream writer: appends asked while the one before waits go out together, in order, and nothing overtakes
// an exclusive section asked before it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamWriter } from "../../src/actors/streamWriter.ts";
import { systemClock } from "../../src/events/clock.ts";
import { asContextId, asRunId } from "../../src/events/ids.ts";
import type { DomainEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { recordingStore } from "../../bench/support/recordingStore.ts";
import { freshPgliteStore } from "../support/pglite.ts";

let base: EventStore;
beforeAll(async () => {
  base = await freshPgliteStore();
});
afterAll(async () => {
  await base.close();
});

const message = (text: string): DomainEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
});
const texts = (facts: readonly RecordedEvent[]) =>
  facts.map((f) => (f.type === "MessageReceived" ? f.data.text : f.type));

/** `base`, remembering every append (the bench's recorder); `appends()` gives each one's texts, in the order asked. */
const counting = () => {
  const store = recordingStore(base);
  return {
    store,
    appends: () => store.appends.map((a) => a.events.map((e) => (e.type === "MessageReceived" ? e.data.text : e.type))),
  };
};

const writerOn = (store: EventStore) => {
  const applied: string[][] = [];
  const writer = new StreamWriter(store, asContextId(`ctx-${crypto.randomUUID()}`), 0, systemClock, (facts) =>
    applied.push(texts(facts)),
  );
  return { writer, applied };
};

describe("when appends are asked while the stream's first append is still queued", () => {
  it("sends them as one append in the order asked, and answers each with its own facts", async () => {
    const { store, appends } = counting();
    const { writer, applied } = writerOn(store);
    writer.stage([message("staged")]);
    const answers = await Promise.all([
      writer.append([message("a")]),
      writer.append([message("b"), message("c")]),
      writer.append([message("d")]),
    ]);
    expect(appends()).toEqual([["staged", "a", "b", "c", "d"]]);
    expect(answers.map(texts)).toEqual([["a"], ["b", "c"], ["d"]]);
    expect(applied).toEqual([["staged", "a", "b", "c", "d"]]);
    expect((await base.readStream(writer.streamId)).map((e) => e.streamVersion)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("when an exclusive section is asked between two appends", () => {
  it("keeps its place: the append asked after it does not join the group before it", async () => {
    const { store, appends } = counting();
    const { writer } = writerOn(store);
    const first = writer.append([message("first")]);
    const section = writer.exclusive((append) => append([message("in the section")]));
    const after = writer.append([message("after")]);
    const also = writer.append([message("also after")]);
    await Promise.all([first, section, after, also]);
    expect(appends()).toEqual([["first"], ["in the section"], ["after", "also after"]]);
  });
});

describe("when a group's append fails", () => {
  it("rejects every append of the group with that error, and the next append goes on from the stream's version", async () => {
    const { writer } = writerOn(base);
    await writer.append([message("one")]);
    // Another writer moves the stream on: the group's expected version is stale.
    await base.append(writer.streamId, [message("foreign")], { expectedVersion: 1 });
    const results = await Promise.allSettled([writer.append([message("x")]), writer.append([message("y")])]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    const [a, b] = results as [PromiseRejectedResult, PromiseRejectedResult];
    expect(a.reason).toBe(b.reason);
    expect((a.reason as Error).name).toBe("ConcurrencyError");
    expect(texts(await base.readStream(writer.streamId))).toEqual(["one", "foreign"]);
  });
});
