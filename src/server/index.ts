// The server's public entry: `serve` loads the HTTP stack (hono) on first call, so importing actorzero costs nothing
// for an embedder that never serves.
import type { Runtime } from "../runtime/api.ts";
import type { ServeOptions, ServerHandle } from "./serve.ts";

export type { ServeOptions, ServerHandle } from "./serve.ts";
export { readTokensFile, ROLES, type NamedToken, type Role } from "./tokens.ts";
export {
  DEFAULT_PORT,
  ServeRefused,
  isLoopback,
  refusedServeOptions,
  CONTROL_SOCKET_NAME,
  controlSocketPath,
} from "./policy.ts";

/**
 * Serves `rt` over HTTP (JSON under /v1, Server-Sent Events, OpenAPI). Binds 127.0.0.1 unless `host` says
 * otherwise; refuses a non-loopback address without `token`.
 *
 * @example
 * const server = await serve(rt, { port: 7077, token: process.env.ACTORZERO_TOKEN });
 * await server.close({ whileDraining: () => rt.close() });
 */
export const serve = async (rt: Runtime, options: ServeOptions = {}): Promise<ServerHandle> =>
  (await import("./serve.ts")).serve(rt, options);

/**
 * For a runtime on a PGlite data dir: the same API on `<dataDir>/control.sock` (0600, no token), so that
 * `actorzero stop|send|pause|resume|contexts|tree|audit|events` reach this process while it holds the dir.
 *
 * @example
 * const control = await serveControlSocket(rt, "./.actorzero");
 * // … later: await control.close(); await rt.close();
 */
export const serveControlSocket = async (rt: Runtime, dataDir: string): Promise<ServerHandle> =>
  (await import("./controlSocket.ts")).serveControlSocket(rt, dataDir);
