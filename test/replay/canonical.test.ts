// The canonical form requests are keyed by: generated ids as placeholders both ways, and secrets never in a fixture.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, exportFixture, scriptedTurns } from "../../src/index.ts";
import { canonicalJson, hashOf, normalizeIds, restoreIds } from "../../src/fixtures/canonical.ts";
import { replayFixture } from "../../src/testing/index.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";

const A = "0b7d1c2e-1111-4a2b-9c3d-aaaaaaaaaaaa";
const B = "5e6f7a8b-2222-4c3d-8e4f-bbbbbbbbbbbb";

describe("given a request holding generated ids", () => {
  it("when it is normalized, then each id is a placeholder numbered by first appearance, and restoring gives the live ids", () => {
    const request = {
      messages: [{ content: `child ${B} done` }, { content: `again ${B}, job callsubordin-1a2b3c4d of ${A}` }],
    };
    const { value, ids } = normalizeIds(request);
    expect(value).toEqual({
      messages: [{ content: "child <<id:1>> done" }, { content: "again <<id:1>>, job <<id:2>> of <<id:3>>" }],
    });
    expect(ids).toEqual([B, "callsubordin-1a2b3c4d", A]);
    expect(restoreIds({ context_id: "<<id:3>>", other: "<<id:9>>" }, ids)).toEqual({
      context_id: A,
      other: "<<id:9>>",
    });
  });

  it("when two requests differ only in their ids, then they hash alike; key order never matters", () => {
    const one = normalizeIds({ model: "m", messages: [{ role: "tool", content: `(context_id: ${A})` }] }).value;
    const two = normalizeIds({ messages: [{ content: `(context_id: ${B})`, role: "tool" }], model: "m" }).value;
    expect(hashOf(one)).toBe(hashOf(two));
    expect(canonicalJson(two)).toBe('{"messages":[{"content":"(context_id: <<id:1>>)","role":"tool"}],"model":"m"}');
    expect(hashOf({ ...one, model: "n" })).not.toBe(hashOf(one));
  });
});

describe("given a run whose message carries an API key", () => {
  let store: FreshPgliteStore;
  beforeAll(async () => {
    store = await freshPgliteStore();
  });
  afterAll(async () => {
    await store?.close();
  });

  it("when it is exported, then the key is redacted everywhere, and the fixture still replays", async () => {
    const secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    const rt = await createRuntime({ store, model: scriptedTurns([{ text: "Stored." }]) });
    const root = await rt.createContext({ name: "keeper" });
    await rt.send(root.id, `Remember the key ${secret} for later.`);
    const fixture = await exportFixture(rt, root.id);
    await rt.close();
    const text = JSON.stringify(fixture);
    expect(text).not.toContain(secret);
    expect(text).toContain("Remember the key *** for later.");
    const result = await replayFixture(JSON.parse(text), { store });
    expect(result.drift).toEqual([]);
  });
});
