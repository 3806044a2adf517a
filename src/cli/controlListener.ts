// The CLI process that holds a PGlite data dir (run, send, serve) answers on the dir's control socket while it runs.
// Requirements: the HTTP stack loads only for a data dir; a socket that cannot be opened (e.g. a path too long for
// a Unix socket) is a warning, never a failed run; closing it answers the requests still waiting before the runtime closes.
import type { Runtime } from "../runtime/runtime.ts";
import type { Io } from "./context.ts";
import type { LogLocation } from "./openLog.ts";

export type ControlListener = { close(): Promise<void> };

/** Listens before the command appends anything, so whoever sees its first event can reach it. */
export const listenForControl = async (rt: Runtime, where: LogLocation, io: Io): Promise<ControlListener> => {
  if (where.kind !== "pglite") return { close: async () => undefined };
  try {
    const { serveControlSocket } = await import("../server/index.ts");
    const handle = await serveControlSocket(rt, where.dataDir);
    return { close: () => handle.close() };
  } catch (e) {
    io.warn(
      `actorzero: other commands cannot reach this process (no control socket in ${where.shown}: ${(e as Error).message})`,
    );
    return { close: async () => undefined };
  }
};
