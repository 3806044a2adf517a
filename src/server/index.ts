// The server's public entry: `serve` loads the HTTP stack (hono) on first call, so importing actorzero costs nothing
// for an embedder that never serves.
import type { Runtime } from "../index.ts";
import type { ServeOptions, ServerHandle } from "./serve.ts";

export type { ServeOptions, ServerHandle } from "./serve.ts";
export { DEFAULT_PORT, ServeRefused, isLoopback } from "./policy.ts";

/**
 * Serves `rt` over HTTP (JSON under /v1, Server-Sent Events, OpenAPI). Binds 127.0.0.1 unless `host` says
 * otherwise; refuses a non-loopback address without `token`.
 *
 * @example
 * const server = await serve(rt, { port: 7077, token: process.env.ACTORZERO_TOKEN });
 * await server.close({ whileDraining: () => rt.close() });
 */
export const serve = async (rt: Runtime, options: ServeOptions = {}): Promise<ServerHandle> => (await import("./serve.ts")).serve(rt, options);
