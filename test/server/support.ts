// Shared by the server tests: a runtime on a fresh PGlite store served over real HTTP, a gate that holds a run
// in its model call, and a Server-Sent Events reader over fetch.
import {
  createRuntime,
  scriptedModel,
  serve,
  type ModelRequest,
  type ModelTurn,
  type Runtime,
  type ServeOptions,
  type ServerHandle,
} from "../../src/index.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";

export type Served = {
  rt: Runtime;
  store: FreshPgliteStore;
  server: ServerHandle;
  url: string;
  close(): Promise<void>;
};

/** A runtime whose model answers with `handler`, served on a free port. */
export const served = async (
  handler: (req: ModelRequest) => ModelTurn | Promise<ModelTurn>,
  options: ServeOptions = {},
  runtime: Partial<Parameters<typeof createRuntime>[0]> = {},
): Promise<Served> => {
  const store = await freshPgliteStore();
  const rt = await createRuntime({
    store,
    model: scriptedModel(handler),
    limits: { retryBaseMs: 1, retryMaxMs: 5, passivateAfterMs: 50 },
    ...runtime,
  });
  const server = await serve(rt, { port: 0, ...options });
  return {
    rt,
    store,
    server,
    url: server.url,
    close: async () => {
      await server.close({ whileDraining: () => rt.close() });
      await store.close();
    },
  };
};

/** A promise with its resolver outside: a model call that waits on it keeps the run running. */
export const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
};

export const api = async (
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) => {
  const res = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : (JSON.parse(text) as any), headers: res.headers };
};

export type SseEvent = { id: string | null; event: string | null; data: string };

/** An SSE connection: `next()` gives the next event; `abort()` drops the connection as a network failure would. */
export const sse = async (url: string, headers: Record<string, string> = {}) => {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const next = async (): Promise<SseEvent | null> => {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields: SseEvent = { id: null, event: null, data: "" };
        let any = false;
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const i = line.indexOf(":");
          const key = line.slice(0, i);
          const value = line.slice(i + 1).replace(/^ /, "");
          if (key === "id") fields.id = value;
          else if (key === "event") fields.event = value;
          else if (key === "data") fields.data += value;
          any = true;
        }
        if (any) return fields;
        continue;
      }
      let chunk;
      try {
        chunk = await reader.read();
      } catch {
        return null;
      }
      if (chunk.done) return null;
      buffer += chunk.value;
    }
  };
  /** Events until `until` says stop (inclusive). */
  const collect = async (until: (e: SseEvent, all: SseEvent[]) => boolean): Promise<SseEvent[]> => {
    const all: SseEvent[] = [];
    for (;;) {
      const e = await next();
      if (!e) return all;
      all.push(e);
      if (until(e, all)) return all;
    }
  };
  return { next, collect, abort: () => controller.abort(), response: res };
};
