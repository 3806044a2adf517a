// The CLI's live tree shows the running agent's text as the model streams it: live deltas folded into the view's
// state beside the stored events, from the real `openai` client against a local streaming server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, isLiveDelta, openAIModel, type EventStore, type Runtime } from "../../src/index.ts";
import { paintFor } from "../../src/cli/ansi.ts";
import { LiveState } from "../../src/cli/liveState.ts";
import { liveRows } from "../../src/cli/liveView.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";

let store: EventStore;
let server: FakeOpenAIServer;
let rt: Runtime;
beforeAll(async () => {
  store = await freshPgliteStore();
  server = await startFakeOpenAIServer();
  rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-test-live-0123456789", baseURL: server.baseURL, model: "m" }),
    presets: { Default: { model: "m" } },
  });
});
afterAll(async () => {
  await rt.close();
  await server.close();
  await store.close();
});

describe("given the live tree while A0's reply streams", () => {
  it("shows the text streamed so far in A0's NOW column", async () => {
    server.reply({ text: "Lisbon has seven hills and many trams", chunkSize: 7, hangAfterChunks: 4 });
    const state = new LiveState();
    const plain = paintFor({ isTTY: false }, {});
    let streamed!: () => void;
    const threeDeltas = new Promise<void>((resolve) => (streamed = resolve));
    let deltas = 0;
    const unsubscribe = await rt.subscribe(
      (e) => {
        if (!isLiveDelta(e)) return state.apply(e);
        state.applyDelta(e);
        if (++deltas === 3) streamed();
      },
      { deltas: true },
    );
    const root = await rt.createContext({ name: "guide" });
    state.seed([root]);

    const sent = rt.send(root.id, "tell me about Lisbon");
    await threeDeltas;
    const during = liveRows(state, root.id, plain, Date.now());
    await rt.stop(root.id);
    await sent;
    unsubscribe();

    expect(during).toContain("“Lisbon has seven hill"); // three pieces of seven characters
  });
});
