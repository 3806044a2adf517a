// A subscription that leaves out its own store's appends: what another process wrote still arrives, in position
// order and whole, whether it lands among this store's appends or alone.
import { afterEach, expect, it } from "vitest";
import { asRunId } from "../../src/events/ids.ts";
import { openPostgresStore } from "../../src/events/postgresStore.ts";
import type { NewEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { EventStore } from "../../src/events/store.ts";
import { eventually } from "../support/async.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";

const message = (text: string): NewEvent => ({
  type: "MessageReceived",
  data: { runId: asRunId("run-1"), text, sender: "user" },
  metadata: { correlationId: "run-1", causationId: null, actor: "test" },
});

const texts = (events: RecordedEvent[]) => events.map((e) => (e.type === "MessageReceived" ? e.data.text : e.type));

describeWithPostgres("when a subscription asks for other processes' events only", () => {
  const db = usePostgresDatabase("actorzero_others");
  const open: EventStore[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  it("delivers every event the other store appended, in order, and none of its own", async () => {
    const url = await db.fresh();
    const mine = await openPostgresStore({ url });
    const theirs = await openPostgresStore({ url });
    open.push(mine, theirs);
    const seen: RecordedEvent[] = [];
    const everything: RecordedEvent[] = [];
    const stop = mine.subscribe(0, (e) => void seen.push(e), { othersOnly: true });
    const stopAll = mine.subscribe(0, (e) => void everything.push(e));
    // Interleaved: own appends before, between and after the other store's, several at once too.
    await mine.append("a", [message("mine 1")], { expectedVersion: "no_stream" });
    await theirs.append("b", [message("theirs 1"), message("theirs 2")], { expectedVersion: "no_stream" });
    await Promise.all([
      mine.append("a", [message("mine 2")], { expectedVersion: 1 }),
      mine.append("c", [message("mine 3")], { expectedVersion: "no_stream" }),
      theirs.append("d", [message("theirs 3")], { expectedVersion: "no_stream" }),
    ]);
    await mine.append("a", [message("mine 4")], { expectedVersion: 2 });
    await theirs.append("b", [message("theirs 4")], { expectedVersion: 2 });
    await eventually(() => everything.length === 8, 15_000, "the full subscription saw all eight events");
    await eventually(
      () => seen.some((e) => e.type === "MessageReceived" && e.data.text === "theirs 4"),
      15_000,
      "the last event of the other store",
    );
    stop();
    stopAll();
    expect(texts(seen)).toEqual(["theirs 1", "theirs 2", "theirs 3", "theirs 4"]);
    expect(seen.map((e) => e.globalPosition)).toEqual([...seen.map((e) => e.globalPosition)].sort((a, b) => a - b));
    // The full subscription beside it is untouched: it gets this store's appends too.
    expect(
      texts(everything)
        .filter((t) => t.startsWith("mine"))
        .sort(),
    ).toEqual(["mine 1", "mine 2", "mine 3", "mine 4"]);
  }, 60_000);
});
