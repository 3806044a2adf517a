// `actorzero serve`: the HTTP API (JSON under /v1, Server-Sent Events, OpenAPI) over the log, until SIGTERM or Ctrl-C.
// Requirements: 127.0.0.1 unless --host says otherwise; a token from --token or ACTORZERO_TOKEN; a non-loopback
// address without one is refused before anything opens; on SIGTERM/SIGINT: stop accepting, record unfinished runs
// as interrupted (the runtime's close), close the store, exit 0.
import path from "node:path";
import { z } from "zod";
import type { NamedToken } from "../../server/tokens.ts";
import { loadConfig } from "../config.ts";
import type { Io } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { portFlag } from "../flags.ts";
import { defineCommand, RUN_STORE_FLAGS, textFlag, type Flag, type ValuesOf } from "../defineCommand.ts";
import { chooseModel } from "../modelChoice.ts";
import { describeLocation, locate, openLog } from "../openLog.ts";
import { checkRuntimeFor, runtimeFor } from "../runtimeFor.ts";
import { SERVER_MODEL_FLAGS } from "../modelFlags.ts";

/** A flag given once or more, each a comma-separated list. */
const nameList = (value: string, flag: string, description: string) =>
  ({
    type: "string",
    multiple: true,
    value,
    description,
    schema: z
      .array(z.string())
      .transform((list) => list.flatMap((x) => x.split(",")).map((x) => x.trim()))
      .refine((list) => list.every((x) => x !== ""), { message: `${flag} needs a value` })
      .optional(),
  }) satisfies Flag;

export const serveSpec = defineCommand({
  name: "serve",
  summary: "Serve the runtime over HTTP: a JSON API under /v1, the log as Server-Sent Events, an OpenAPI document.",
  usage: [
    "serve [--port <n>] [--host <addr>] [--token <secret>] [--tokens-file <file>] [--allowed-host <name>]… [--allow-origin <origin>]…",
  ],
  flags: {
    port: {
      type: "string",
      value: "<n>",
      description: "TCP port (default 7077; 0 picks a free one)",
      schema: portFlag("--port").optional(),
    },
    host: textFlag("<addr>", "address to bind (default 127.0.0.1; any other needs a token)", "--host needs an address"),
    token: textFlag(
      "<secret>",
      "bearer token every route but /healthz requires (or ACTORZERO_TOKEN)",
      "--token needs a value",
    ),
    "tokens-file": textFlag(
      "<file>",
      'named tokens with roles, JSON: { "tokens": [{ "name", "token", "role" }] } (see docs/serving.md)',
      "--tokens-file needs a file",
    ),
    "allowed-host": nameList(
      "<name>",
      "--allowed-host",
      "another Host name to answer to (e.g. this machine's DNS name); other names get 421",
    ),
    "allow-origin": nameList(
      "<origin>",
      "--allow-origin",
      "another web origin whose pages may call the API (CORS); other origins get 403",
    ),
    ...SERVER_MODEL_FLAGS,
    ...RUN_STORE_FLAGS,
  },
  details: `Prints one line, "actorzero serving <url> (…)", once it listens. SIGTERM or Ctrl-C drains: new requests get 503,
event streams end, runs still in flight are recorded as interrupted, the log is closed. See docs/cli.md for the routes.
On a PGlite data dir it also answers on the Unix socket <data-dir>/control.sock (same API, this user only).
Only its own clients may call it: a Host it is not reached by gets 421, a web page of another origin 403, a
write whose Content-Type is not application/json 415 (see README, "Serving safely").`,
});
type Values = ValuesOf<typeof serveSpec>;

const authText = (token: string | undefined, tokens: NamedToken[] | undefined): string => {
  const n = (token ? 1 : 0) + (tokens?.length ?? 0);
  if (n === 0) return "no token: loopback only";
  return n === 1 ? "bearer token required" : `bearer token required: ${n} named tokens`;
};

export const serveCommand = async (v: Values, io: Io): Promise<number> => {
  const { serve, serveControlSocket, refusedServeOptions, readTokensFile, ServeRefused } =
    await import("../../server/index.ts");
  const token = v.token ?? (io.env["ACTORZERO_TOKEN"] || undefined);
  const host = v.host ?? "127.0.0.1";
  let tokens: NamedToken[] | undefined;
  if (v["tokens-file"] !== undefined) {
    try {
      tokens = readTokensFile(path.resolve(io.cwd, v["tokens-file"]));
    } catch (e) {
      throw new CliError((e as Error).message);
    }
  }
  const served = {
    host,
    token,
    ...(tokens ? { tokens } : {}),
    ...(v["allowed-host"] ? { allowedHosts: v["allowed-host"] } : {}),
    ...(v["allow-origin"] ? { allowOrigins: v["allow-origin"] } : {}),
  };
  // Refused before anything opens, so a refusal leaves no data dir behind.
  const refused = refusedServeOptions(served);
  if (refused !== null) throw new CliError(refused);
  const where = locate(v, "serve");
  const config = loadConfig(io.cwd);
  const choice = await chooseModel(v, config, io.env);
  await checkRuntimeFor(config, choice);
  const store = await openLog(where, { create: true });
  try {
    const rt = await runtimeFor(store, config, choice, v.recovery ?? "resume");
    try {
      const handle = await serve(rt, { port: v.port ?? 7077, ...served }).catch((e: unknown) => {
        if (e instanceof ServeRefused) throw new CliError(e.message);
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "EADDRINUSE")
          throw new CliError(`port ${v.port ?? 7077} on ${host} is in use: pick another with --port`);
        throw e;
      });
      // The data dir's holder also answers on a Unix socket beside its lock: the same API, for local tools.
      // Only this user can reach it (the socket file is made 0600), so it needs no token.
      const control = where.kind === "pglite" ? await serveControlSocket(rt, where.dataDir) : null;
      io.print(
        `actorzero serving ${handle.url} (${describeLocation(where)}; ${authText(token, tokens)}; ${choice.banner})`,
      );
      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        process.once("SIGTERM", () => resolve("SIGTERM"));
        process.once("SIGINT", () => resolve("SIGINT"));
      });
      io.warn(`actorzero: ${signal}: draining (new requests get 503; runs in flight are recorded as interrupted)`);
      // The runtime closes while the server drains, so a waiting request hears of its run's end before the sockets go.
      await Promise.all([handle.close({ whileDraining: () => rt.close() }), control?.close()]);
    } finally {
      await rt.close();
    }
  } finally {
    await store.close();
  }
  io.warn("actorzero: stopped; the log is closed");
  return EXIT.ok;
};
