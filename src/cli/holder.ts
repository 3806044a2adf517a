// Reaching the process that holds a PGlite data dir: the HTTP API on its control socket (`<data-dir>/control.sock`).
//
// Requirements:
// - A command that finds the dir locked asks the holder instead of failing; only when no process answers on the
//   socket (an embedder that did not open one, or a holder still starting) does the lock error stand.
// - A holder still starting (lock taken, socket not yet listening) or a reader holding the dir for a moment is
//   waited for, briefly; a socket file whose holder is gone is never used.
// - No HTTP stack is loaded: node:http over the socket, and a small Server-Sent Events reader.
import fs from "node:fs";
import { request } from "node:http";
import path from "node:path";
import { StoreError } from "../events/errors.ts";
import type { RecordedEvent } from "../events/schema.ts";
import type { EventStore } from "../events/store.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { Projections } from "../projections/engine.ts";
import { CONTROL_SOCKET_NAME, controlSocketPath } from "../server/policy.ts";
import { CliError } from "./errors.ts";
import { openLog, type LogLocation } from "./openLog.ts";

/** How long a command waits for a locked dir to be released or its holder to answer. */
const WAIT_FOR_HOLDER_MS = 10_000;

export type HolderAnswer = { status: number; body: any };

export type Holder = {
  readonly socketPath: string;
  /** One request; the body is JSON both ways. */
  call(method: string, route: string, body?: unknown): Promise<HolderAnswer>;
  /** Every event after `after`, as the holder appends them, until `close()` (or the holder goes away: `ended`). */
  follow(after: number, listener: (e: RecordedEvent) => void): { close(): void; ended: Promise<void> };
};

/** The log a command opened itself, or the process that holds it. */
export type Opened = { store: EventStore; holder?: never } | { holder: Holder; store?: never };

/**
 * Opens the log as `openLog` does; on a PGlite data dir another process holds, returns that process
 * (over its control socket) instead.
 */
export const openLogOrHolder = async (
  where: LogLocation,
  options: { create: boolean; readOnly?: boolean; schema?: "existing" },
): Promise<Opened> => {
  if (where.kind !== "pglite") return { store: await openLog(where, options) };
  const deadline = Date.now() + WAIT_FOR_HOLDER_MS;
  for (;;) {
    try {
      return { store: await openLog(where, options) };
    } catch (e) {
      if (!(e instanceof StoreError && e.reason === "locked")) throw e;
      const holder = await reach(where.dataDir);
      if (holder) return { holder };
      if (Date.now() > deadline) {
        throw new CliError(
          `${e.message} It does not answer on ${path.join(where.shown, CONTROL_SOCKET_NAME)} (only actorzero run, send and serve do, and an embedder that calls serveControlSocket).`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
};

/** The holder behind the socket in `dataDir`, or null when nothing answers there. */
export const reach = async (dataDir: string): Promise<Holder | null> => {
  const socketPath = controlSocketPath(dataDir);
  if (!fs.existsSync(socketPath)) return null;
  const holder = holderAt(socketPath);
  try {
    const health = await holder.call("GET", "/healthz");
    return health.status === 200 ? holder : null;
  } catch {
    // ECONNREFUSED: a socket file its dead holder left behind.
    return null;
  }
};

const holderAt = (socketPath: string): Holder => ({
  socketPath,
  call: (method, route, body) =>
    new Promise<HolderAnswer>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          socketPath,
          path: route,
          method,
          agent: false,
          // Every write says it is JSON, a body or not: the server refuses any other write (415).
          headers:
            method === "GET"
              ? {}
              : { "content-type": "application/json", "content-length": Buffer.byteLength(payload ?? "") },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (text += d));
          res.on("end", () => {
            try {
              resolve({ status: res.statusCode ?? 0, body: text === "" ? null : JSON.parse(text) });
            } catch {
              reject(
                new CliError(
                  `the process holding the data dir answered ${res.statusCode} with something that is not JSON`,
                ),
              );
            }
          });
          res.on("error", reject);
        },
      );
      req.on("error", (e: NodeJS.ErrnoException) =>
        reject(
          new HolderGone(`the process holding the data dir went away (${e.code ?? e.message}) before it answered`),
        ),
      );
      req.end(payload);
    }),
  follow: (after, listener) => {
    let closed = false;
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const req = request(
      {
        socketPath,
        path: `/v1/events/stream?after=${after}`,
        method: "GET",
        agent: false,
        headers: { accept: "text/event-stream" },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          markEnded();
          return;
        }
        res.setEncoding("utf8");
        let buffer = "";
        res.on("data", (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let event = "";
            let data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("event:")) event = line.slice(6).trim();
              else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
            }
            if (data !== "" && event !== "overflow" && !closed) listener(JSON.parse(data) as RecordedEvent);
          }
        });
        res.on("end", markEnded);
        res.on("error", markEnded);
        res.on("close", markEnded);
      },
    );
    req.on("error", markEnded);
    req.end();
    return {
      close: () => {
        closed = true;
        req.destroy();
        markEnded();
      },
      ended,
    };
  },
});

/** The holder closed its socket (it is exiting, e.g. a `run` whose root run ended): the dir is about to be free. */
export class HolderGone extends CliError {}

/** A refusal from the holder as one line (its `{"error":{"code","message"}}`), for answers a command does not expect. */
export const holderRefused = (answer: HolderAnswer): CliError =>
  new CliError(answer.body?.error?.message ?? `the process holding the data dir answered ${answer.status}`);

/** The holder's contexts, as `resolveContext` reads them (one request each, never the whole log). */
export const holderContexts = (holder: Holder): Pick<Projections, "contexts"> => ({
  contexts: {
    get: async (id) => {
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) return null;
      const answer = await holder.call("GET", `/v1/contexts/${id}`);
      if (answer.status === 404) return null;
      if (answer.status !== 200) throw holderRefused(answer);
      return answer.body as ContextView;
    },
    list: async () => {
      const answer = await holder.call("GET", "/v1/contexts");
      if (answer.status !== 200) throw holderRefused(answer);
      return answer.body.contexts as ContextView[];
    },
  },
});
