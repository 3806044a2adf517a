// A runtime on a fresh PGlite log whose model is the real `openai` client against a local server that enforces a
// context window (windowServer.ts), as the compaction and budget tests of a long conversation use it.
import { openAIModel } from "../../src/models/openai.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, type Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";
import { freshPgliteStore } from "./pglite.ts";
import { startWindowServer, type WindowServer } from "./windowServer.ts";

export type WindowedRuntime = { store: EventStore; server: WindowServer; rt: Runtime; close(): Promise<void> };

/** Opens the log, the server and the runtime (one preset with `window` and `maxOutput`, no model retries). */
export const openWindowedRuntime = async (opts: {
  window: number;
  maxOutput: number;
  resultWords?: number;
  limits?: RuntimeOptions["limits"];
}): Promise<WindowedRuntime> => {
  const store = await freshPgliteStore();
  const server = await startWindowServer({
    window: opts.window,
    reserve: opts.maxOutput,
    ...(opts.resultWords === undefined ? {} : { resultWords: opts.resultWords }),
  });
  const rt = await createRuntime({
    store,
    model: openAIModel({ apiKey: "sk-test", baseURL: server.baseURL }),
    presets: { Default: { model: "gpt-4o-mini", contextWindow: opts.window, maxOutputTokens: opts.maxOutput } },
    limits: { modelRetries: 0, retryBaseMs: 5, retryMaxMs: 50, ...opts.limits },
  });
  return {
    store,
    server,
    rt,
    async close() {
      await rt.close();
      await server.close();
      await store.close();
    },
  };
};
