// A compacted history read back: a fork before or after a compaction keeps its history's view, and the view
// rebuilt from the log alone is the one the runtime holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../src/runtime/runtime.ts";
import type { EventStore } from "../../src/events/store.ts";
import { transcriptOf } from "../../src/projections/transcript.ts";
import { auditRuns } from "../../src/projections/auditReport.ts";
// @ts-expect-error: the page's plain-JS module has no types
import { timelineRows } from "../../src/server/web/timelineView.js";
import type { WindowServer } from "../support/windowServer.ts";
import { openWindowedRuntime, type WindowedRuntime } from "../support/windowedRuntime.ts";

const WINDOW = 5000;
const MAX_OUTPUT = 200;
let store: EventStore;
let server: WindowServer;
let rt: Runtime;
let opened: WindowedRuntime;

beforeAll(async () => {
  opened = await openWindowedRuntime({ window: WINDOW, maxOutput: MAX_OUTPUT, resultWords: 150 });
  ({ store, server, rt } = opened);
});
afterAll(() => opened.close());

describe("when a compacted context is forked and its history rebuilt", () => {
  it("a fork before the compaction has the full history, one after it the compacted view, and a rebuild equals the live view", async () => {
    const root = await rt.createContext();
    let events = await rt.events({ contextId: root.id });
    for (let turn = 1; turn <= 30 && !events.some((e) => e.type === "HistoryCompacted"); turn++) {
      expect(await rt.send(root.id, `turn ${turn}`)).toMatchObject({ status: "completed" });
      events = await rt.events({ contextId: root.id });
    }
    const compaction = events.find((e) => e.type === "HistoryCompacted");
    expect(compaction).toBeDefined();
    const before = events[events.indexOf(compaction!) - 1]!;
    const after = events.at(-1)!;
    const upTo = (position: number) => events.filter((e) => e.globalPosition <= position);

    const early = await rt.fork(root.id, { at: before.globalPosition });
    expect(await rt.history(early.id)).toEqual(transcriptOf(upTo(before.globalPosition)));
    expect(String((await rt.history(early.id))[0]!.content)).not.toMatch(/^Summary of the earlier conversation/);

    const late = await rt.fork(root.id, { at: after.globalPosition });
    expect(await rt.history(late.id)).toEqual(await rt.history(root.id));
    expect(String((await rt.history(late.id))[0]!.content)).toMatch(/^Summary of the earlier conversation/);
    expect(await rt.history(late.id, { full: true })).toEqual(await rt.history(root.id, { full: true }));

    // The audit and the page's timeline show the compaction in its run.
    const runs = auditRuns(events);
    const entry = runs.flatMap((r) => r.entries).find((e) => e.kind === "compaction");
    expect(entry).toMatchObject({ kind: "compaction", position: compaction!.globalPosition, trigger: "threshold" });
    const rows = timelineRows({ runs }) as { kind: string; text: string }[];
    expect(rows.find((r) => r.kind === "compaction")?.text).toMatch(
      /^compaction · step \d+ · \d+ topic\(s\) summarised .* → \d+ tokens/,
    );
    // Bad options are refused with the field named.
    await expect(rt.history(root.id, { full: "yes" } as never)).rejects.toThrow(/full: expected true or false/);
    // The live view (the runtime's projection) equals a fold of the log from zero.
    expect(await rt.history(root.id)).toEqual(transcriptOf(events));
  }, 120_000);
});
