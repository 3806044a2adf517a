// The one gate every request passes before any route (page, API, streams, /healthz): only serve's own clients get in.
// Requirements:
// - Host: a TCP server answers only the names it is reached by: the address it is bound to (for a loopback bind also
//   localhost, 127.0.0.1 and [::1]; for a wildcard bind this machine's addresses and host name) and the names given
//   as allowed hosts. Anything else is a 421, so a DNS-rebinding page (Host: evil.example) reads and writes nothing.
//   The control socket has no names to rebind (no browser reaches a Unix socket), so it skips this check.
// - Origin: a request that carries one must come from serve's own origin (http://<its Host>) or an origin opted in;
//   anything else is a 403. Browsers send Origin on every cross-origin write (form posts and no-cors fetches
//   included), so no other web page can drive the runtime. A fetch the browser marks as cross-site or same-site
//   (Sec-Fetch-Site) is refused the same way unless it is a page navigation, so another page cannot hold streams open
//   or time reads either.
// - Opted-in origins get the CORS headers they need, preflight (OPTIONS) included; nobody else gets any.
// - Writes (every method but GET, HEAD and OPTIONS) need Content-Type: application/json, else 415: no HTML form
//   and no "simple" cross-origin request can send that type without a preflight.
import { hostname, networkInterfaces } from "node:os";
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./errors.ts";
import { hostName, isLoopback, normalOrigin } from "./policy.ts";

export type GuardOptions = {
  /** The address the server is bound to; undefined for a Unix socket (no Host check there). */
  boundHost: string | undefined;
  /** More names the server may be reached by (e.g. behind a proxy, or a DNS name of this machine). */
  allowedHosts?: readonly string[];
  /** Origins other than serve's own allowed to call it from a browser (e.g. https://dashboard.example). */
  allowOrigins?: readonly string[];
};

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];
const WILDCARD = new Set(["0.0.0.0", "::", "[::]"]);
const READS = new Set(["GET", "HEAD", "OPTIONS"]);
const ALLOWED_HEADERS = "authorization, content-type, last-event-id";

const bare = (name: string): string =>
  (name.startsWith("[") && name.endsWith("]") ? name.slice(1, -1) : name).toLowerCase();

/** Every name a TCP server bound to `boundHost` answers to. */
export const namesFor = (boundHost: string, allowedHosts: readonly string[] = []): Set<string> => {
  const names = new Set<string>([bare(boundHost), ...allowedHosts.map(bare)]);
  if (isLoopback(boundHost)) for (const n of LOOPBACK_NAMES) names.add(n);
  if (WILDCARD.has(boundHost)) {
    for (const n of LOOPBACK_NAMES) names.add(n);
    names.add(hostname().toLowerCase());
    for (const list of Object.values(networkInterfaces()))
      for (const a of list ?? []) names.add(bare(a.address.replace(/%.*$/, "")));
  }
  return names;
};

export const requestGuard = (options: GuardOptions): MiddlewareHandler => {
  const names = options.boundHost === undefined ? null : namesFor(options.boundHost, options.allowedHosts);
  const optedIn = new Set((options.allowOrigins ?? []).map((o) => normalOrigin(o) ?? o));
  return async (c, next) => {
    const host = c.req.header("host") ?? "";
    if (names !== null) {
      const name = hostName(host);
      if (name === null || !names.has(name)) {
        throw new ApiError(
          "misdirected",
          `Host '${host.slice(0, 100)}' is not a name this server answers to (it answers to ${[...names].slice(0, 6).join(", ")}; add one with --allowed-host)`,
        );
      }
    }
    const origin = c.req.header("origin");
    const own = `http://${host.toLowerCase()}`;
    let corsFor: string | null = null;
    if (origin !== undefined) {
      const o = normalOrigin(origin);
      if (o !== null && optedIn.has(o)) corsFor = o;
      else if (o !== own)
        throw new ApiError(
          "forbidden",
          `Origin '${origin.slice(0, 100)}' may not call this server (only its own page may; opt another in with --allow-origin)`,
        );
    } else {
      // A cross-site fetch without Origin (a no-cors GET from another page) is refused too; a navigation is a person
      // opening the page, which is allowed from anywhere.
      const site = c.req.header("sec-fetch-site");
      if ((site === "cross-site" || site === "same-site") && c.req.header("sec-fetch-mode") !== "navigate") {
        throw new ApiError(
          "forbidden",
          "a request from another site may not call this server (opt its origin in with --allow-origin)",
        );
      }
    }
    if (corsFor !== null) {
      c.header("access-control-allow-origin", corsFor);
      c.header("vary", "Origin");
      if (c.req.method === "OPTIONS") {
        c.header("access-control-allow-methods", "GET, POST, OPTIONS");
        c.header("access-control-allow-headers", ALLOWED_HEADERS);
        c.header("access-control-max-age", "600");
        return c.body(null, 204);
      }
    }
    if (!READS.has(c.req.method)) {
      const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== "application/json") {
        throw new ApiError(
          "unsupported_media_type",
          `a write needs Content-Type: application/json${type === "" ? "" : ` (got ${type.slice(0, 100)})`}`,
        );
      }
    }
    await next();
  };
};
