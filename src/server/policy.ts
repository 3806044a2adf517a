// What serve allows before it opens anything: the default port, which addresses count as loopback, how Host and
// Origin values read, and which option sets are refused.
// Requirements: no HTTP stack imported here, so the CLI and the public entry can check a request cheaply.

import path from "node:path";
import { SINGLE_TOKEN_NAME, tokensProblem, type NamedToken } from "./tokens.ts";

export const DEFAULT_PORT = 7077;

/** The control socket's name in a PGlite data dir, beside the lock file of the process that holds the dir. */
export const CONTROL_SOCKET_NAME = "control.sock";

export const controlSocketPath = (dataDir: string): string => path.join(path.resolve(dataDir), CONTROL_SOCKET_NAME);

export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);

/** The name part of a Host header (`[::1]:7077` → `::1`, `Example.COM:80` → `example.com`), or null if malformed. */
export const hostName = (header: string): string | null => {
  const h = header.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    if (end < 0) return null;
    const rest = h.slice(end + 1);
    if (rest !== "" && !/^:\d+$/.test(rest)) return null;
    return h.slice(1, end);
  }
  const m = /^([^:/\s@]+)(?::\d+)?$/.exec(h);
  return m ? m[1]!.replace(/\.$/, "") : null;
};

/** An origin as browsers send it: scheme://host[:port], lower-case, no path; null if it is not one. */
export const normalOrigin = (text: string): string | null => {
  try {
    const u = new URL(text);
    if (
      (u.protocol !== "http:" && u.protocol !== "https:") ||
      u.pathname !== "/" ||
      u.search !== "" ||
      u.hash !== "" ||
      u.username !== ""
    )
      return null;
    return u.origin;
  } catch {
    return null;
  }
};

/**
 * Why serve would refuse these options before it opens anything (null if it would not): a non-loopback address
 * without a token, a bad or repeated named token, an allowed origin that is not scheme://host[:port], an allowed host that is not a bare name.
 */
export const refusedServeOptions = (o: {
  host?: string;
  token?: string | undefined;
  tokens?: readonly NamedToken[];
  socketPath?: string;
  allowedHosts?: readonly string[];
  allowOrigins?: readonly string[];
}): string | null => {
  const host = o.host ?? "127.0.0.1";
  const single = o.token === "" ? undefined : o.token;
  if (!o.socketPath && !isLoopback(host) && single === undefined && (o.tokens ?? []).length === 0) {
    return `refusing to listen on ${host} without a token: anyone who can reach it could drive your agents (set --token, ACTORZERO_TOKEN or --tokens-file)`;
  }
  const problem = tokensProblem(o.tokens ?? []);
  if (problem !== null) return problem;
  if (single !== undefined && o.tokens?.some((t) => t.name === SINGLE_TOKEN_NAME || t.token === single)) {
    return `tokens: --token is the admin token named '${SINGLE_TOKEN_NAME}': no named token may have that name or its secret`;
  }
  for (const origin of o.allowOrigins ?? []) {
    if (normalOrigin(origin) === null)
      return `allowed origin '${origin}' is not an origin: give scheme://host[:port], e.g. https://dashboard.example`;
  }
  for (const h of o.allowedHosts ?? []) {
    if (hostName(h) === null || /:\d+$/.test(h.replace(/^\[.*\]/, ""))) {
      return `allowed host '${h}' is not a host name: give a name or address without scheme or port, e.g. actorzero.internal`;
    }
  }
  return null;
};

/** serve refused to start (e.g. a non-loopback address without a token). */
export class ServeRefused extends Error {
  readonly _tag = "ServeRefused" as const;
}
