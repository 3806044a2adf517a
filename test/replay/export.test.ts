// exportFixture and fixtureModel over the offline demo's tree: the export holds each request as it was sent, and
// the replay reaches the same answer with the same log shape.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportFixture, type Fixture } from "../../src/index.ts";
import { canonicalRequest, fixtureModel, replayFixture } from "../../src/testing/index.ts";
import { requestOf } from "../../src/fixtures/format.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";
import { recordDemo, type RecordedDemo } from "./demoFixture.ts";

let store: FreshPgliteStore;
let demo: RecordedDemo;
let fixture: Fixture;

beforeAll(async () => {
  store = await freshPgliteStore();
  demo = await recordDemo(store);
  fixture = await exportFixture(demo.rt, demo.rootId, { tree: true });
});
afterAll(async () => {
  await demo?.rt.close();
  await store?.close();
});

describe("given the offline demo's tree, exported with --tree", () => {
  it("then every model call the run made is in the fixture, keyed by the hash of the request as it was sent", () => {
    expect(fixture.calls.length).toBe(demo.sent.length);
    const sentHashes = demo.sent.map((r) => canonicalRequest(r).hash).sort();
    expect(fixture.calls.map((c) => c.hash).sort()).toEqual(sentHashes);
    for (const call of fixture.calls) {
      const live = demo.sent.find((r) => canonicalRequest(r).hash === call.hash)!;
      expect(requestOf(fixture, call)).toEqual(canonicalRequest(live).request);
    }
  });

  it("then it holds the tree's contexts, their answers and log shapes, the tool results, profiles and prompts", () => {
    expect(fixture.formatVersion).toBe(2);
    expect(fixture.contexts.map((c) => c.path).sort()).toEqual([
      "planner",
      "planner/developer",
      "planner/researcher",
      "planner/researcher/fact-checker",
    ]);
    expect(fixture.contexts[0]!.answers).toEqual([demo.response]);
    expect(fixture.toolResults.map((t) => t.name)).toContain("parallel");
    expect(Object.keys(fixture.profiles).sort()).toEqual(["default", "developer", "researcher"]);
    expect(Object.keys(fixture.prompts).some((p) => p.startsWith("system/"))).toBe(true);
    // The ids a replay makes anew are placeholders in what is matched and replayed.
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
    const replayed = JSON.stringify([
      fixture.calls.map((c) => [c.request, c.reply]),
      fixture.toolResults.map((t) => [t.arguments, t.result]),
    ]);
    expect(replayed).not.toMatch(uuid);
    expect(replayed).toContain("context_id: <<id:1>>");
  });

  it("when it is replayed with fixtureModel, then it reaches the same answer with the same log shape, offline", async () => {
    const result = await replayFixture(fixture, { store });
    expect(result.drift).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.replayed.contexts.find((c) => c.path === "planner")!.answers).toEqual([demo.response]);
    for (const c of fixture.contexts)
      expect(result.replayed.contexts.find((r) => r.path === c.path)!.events).toEqual(c.events);
  });

  it("when a request is not in the fixture, then the call fails loudly naming the changed message and line", async () => {
    const model = fixtureModel(fixture);
    const first = fixture.calls.find((c) => c.agentNumber === 0 && c.step === 1)!;
    const request = structuredClone(requestOf(fixture, first)) as never as {
      model: string;
      messages: { role: string; content: string }[];
      tools: never[];
    };
    request.messages[1]!.content = "Plan the launch of a large closed-source app";
    const call = model.call({
      ...request,
      contextId: "c",
      agentNumber: 0,
      profile: "default",
      signal: new AbortController().signal,
    } as never);
    await expect(call).rejects.toThrow(
      /message 1 \(user\) changed:\n\s+- line 1: Plan the launch of a small open-source note-taking app\n\s+\+ line 1: Plan the launch of a large closed-source app/,
    );
    expect(model.misses).toHaveLength(1);
  });
});
