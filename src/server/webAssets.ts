// The web page's static files: `/` is the page, `/web/<file>` its modules and style, read from the folder beside this file.
//
// Requirements:
// - No build step for the user: the files are served as they are, from src/server/web (sources) or
//   dist/server/web (the package; `npm run build` copies them), whichever this module sits beside.
// - Open like /healthz (a browser cannot send a bearer token when it loads a page); the page asks for the token
//   and sends it with every API call. Nothing secret is in these files.
// - Only the page's own files by name (no paths), with a Content-Security-Policy that allows nothing else.
import { readFile } from "node:fs/promises";
import type { Context, Hono } from "hono";

const WEB_DIR = new URL("./web/", import.meta.url);
const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const send = async (c: Context, name: string) => {
  const ext = name.slice(name.lastIndexOf(".") + 1);
  let body: Buffer;
  try {
    body = await readFile(new URL(name, WEB_DIR));
  } catch {
    return c.json({ error: { code: "not_found", message: `no file ${name}` } }, 404);
  }
  return c.body(new Uint8Array(body), 200, {
    "content-type": TYPES[ext] ?? "application/octet-stream",
    "cache-control": "no-cache",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
  });
};

export const webAssets = (app: Hono): void => {
  app.get("/", (c) => send(c, "index.html"));
  app.get("/web/:file{[a-zA-Z][a-zA-Z0-9]*\\.(js|css|svg)}", (c) => send(c, c.req.param("file")));
};
