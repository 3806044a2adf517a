// What serve allows before it opens anything: the default port and which addresses count as loopback.
// Requirements: no HTTP stack imported here, so the CLI and the public entry can check a request cheaply.

import path from "node:path";

export const DEFAULT_PORT = 7077;

/** The control socket's name in a PGlite data dir, beside the lock file of the process that holds the dir. */
export const CONTROL_SOCKET_NAME = "control.sock";

export const controlSocketPath = (dataDir: string): string => path.join(path.resolve(dataDir), CONTROL_SOCKET_NAME);

export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);

/** serve refused to start (e.g. a non-loopback address without a token). */
export class ServeRefused extends Error {
  readonly _tag = "ServeRefused" as const;
}
