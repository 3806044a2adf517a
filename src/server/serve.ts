// `serve(rt, options)`: the HTTP API on a port or a Unix socket, safe by default, and a drain that loses nothing acknowledged.
// Requirements: binds 127.0.0.1 unless told; refuses a non-loopback address without a token; close() answers 503
// to new requests, ends every event stream, lets waiting requests answer, then stops listening. The runtime and its
// store belong to the caller (the CLI's serve command closes them after the server).
import { createServer, type Server } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { Runtime } from "../runtime/api.ts";
import { buildApp } from "./app.ts";
import { EventHub } from "./eventHub.ts";
import { DEFAULT_PORT, refusedServeOptions, ServeRefused } from "./policy.ts";
import { processUser, SINGLE_TOKEN_NAME, TokenTable, type NamedToken } from "./tokens.ts";

export type ServeOptions = {
  /** TCP port (0 = any free one); ignored with `socketPath`. Default 7077. */
  port?: number;
  /** Address to bind; default 127.0.0.1. A non-loopback address needs `token`. */
  host?: string;
  /** Bearer token every route but /healthz requires when set: an admin token named "admin". */
  token?: string | undefined;
  /**
   * Named bearer tokens with roles (`read`, `act`, `approve`, `admin`); decisions over HTTP are recorded under the
   * token's name. With `token` too, both are accepted.
   */
  tokens?: readonly NamedToken[];
  /**
   * More Host names this server answers to (a DNS name of this machine, a proxy's name). By default only the
   * address it is bound to (and localhost, 127.0.0.1, [::1] for a loopback bind): any other Host gets 421.
   */
  allowedHosts?: readonly string[];
  /**
   * Origins besides its own whose pages may call it from a browser (e.g. "https://dashboard.example"); they get
   * CORS headers. A request with any other Origin gets 403.
   */
  allowOrigins?: readonly string[];
  /** Listen on this Unix socket instead of TCP (the control socket in a data dir). */
  socketPath?: string;
  /** Request body limit in bytes (default 1 MB). */
  bodyLimit?: number;
  /** How many undelivered events an SSE client may lag before it is cut off (default 10 000). */
  maxClientQueue?: number;
  /**
   * How long an event stream may go without taking its next event, its connection not draining, before it is cut
   * (default 30 000 ms); the client resumes with Last-Event-ID. A client waiting for new events is never cut.
   */
  streamStallMs?: number;
  /** Event streams open at once on this server (default 256); one more is a 429. */
  maxStreams?: number;
  /** Event streams open at once per named token (default 64); one more is a 429. */
  maxStreamsPerToken?: number;
};

export type ServerHandle = {
  /** http://host:port, or the socket path. */
  readonly url: string;
  readonly port: number | null;
  readonly server: Server;
  /**
   * Drains: new requests get 503 and event streams end at once; then `whileDraining` runs (e.g. the runtime's
   * close, which records runs in flight as interrupted) before waiting requests give up; resolves once nothing is open.
   */
  close(options?: { whileDraining?: () => Promise<void> }): Promise<void>;
};

export const serve = async (rt: Runtime, options: ServeOptions = {}): Promise<ServerHandle> => {
  const host = options.host ?? "127.0.0.1";
  const token = options.token === "" ? undefined : options.token;
  const refused = refusedServeOptions({ ...options, host, token });
  if (refused !== null) throw new ServeRefused(refused);
  const named = [
    ...(token !== undefined ? [{ name: SINGLE_TOKEN_NAME, token, role: "admin" as const }] : []),
    ...(options.tokens ?? []),
  ];
  const hub = await EventHub.open(rt, {
    ...(options.maxClientQueue ? { maxQueue: options.maxClientQueue } : {}),
    ...(options.streamStallMs ? { stallMs: options.streamStallMs } : {}),
  });
  let closing = false;
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const guard = {
    boundHost: options.socketPath ? undefined : host,
    ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
    ...(options.allowOrigins ? { allowOrigins: options.allowOrigins } : {}),
  };
  const app = buildApp(rt, hub, {
    tokens: new TokenTable(named),
    anonymous: { name: processUser(), role: "admin" },
    guard,
    ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    ...(options.maxStreams ? { maxStreams: options.maxStreams } : {}),
    ...(options.maxStreamsPerToken ? { maxStreamsPerToken: options.maxStreamsPerToken } : {}),
    closing: () => closing,
    closed,
  });
  const server = createServer(getRequestListener(app.fetch));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (options.socketPath) {
      // The socket file is created by bind(), inside listen(), with the mode the umask leaves: under 077 it is
      // the owner's only from its first instant (a chmod after would leave a window another user could connect in).
      const umask = process.umask(0o077);
      try {
        server.listen(options.socketPath, resolve);
      } finally {
        process.umask(umask);
      }
    } else server.listen(options.port ?? DEFAULT_PORT, host, resolve);
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : null;
  const shown = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const url = options.socketPath ?? `http://${shown}:${port}`;
  let done: Promise<void> | null = null;
  return {
    url,
    port,
    server,
    close: (closeOptions = {}) =>
      (done ??= (async () => {
        closing = true;
        hub.close();
        try {
          await closeOptions.whileDraining?.();
        } finally {
          markClosed();
        }
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // Requests still in flight answer (503 or their result); then keep-alive sockets are cut.
        const grace = setTimeout(() => server.closeAllConnections(), 2000);
        await stopped;
        clearTimeout(grace);
      })()),
  };
};
