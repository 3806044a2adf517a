// The control socket: the HTTP API on a Unix socket inside a PGlite data dir, answered by the process that holds the dir.
// Requirements:
// - Only the holder of the dir listens (it holds the lock, so no other live process can own the socket file);
//   a socket file a dead holder left behind is replaced.
// - The socket file is this user's only from the moment it exists (made under umask 077 by serve, then 0600), so it
//   needs no token; it is removed on close.
import { chmodSync, rmSync } from "node:fs";
import type { Runtime } from "../runtime/api.ts";
import { controlSocketPath } from "./policy.ts";
import { serve, type ServerHandle } from "./serve.ts";

/** Serves `rt` on `<dataDir>/control.sock` until the handle is closed (the runtime stays the caller's). */
export const serveControlSocket = async (rt: Runtime, dataDir: string): Promise<ServerHandle> => {
  const socketPath = controlSocketPath(dataDir);
  rmSync(socketPath, { force: true });
  const handle = await serve(rt, { socketPath });
  try {
    chmodSync(socketPath, 0o600);
  } catch (e) {
    await handle.close();
    throw e;
  }
  return {
    ...handle,
    close: async (options) => {
      await handle.close(options);
      rmSync(socketPath, { force: true });
    },
  };
};
