// Builds a PGlite data dir holding the event log schema, plus its tarball, under `root`.
import fs from "node:fs/promises";
import path from "node:path";
import { dumpPgliteDataDir, openPgliteStore } from "../../src/events/pgliteStore.ts";

export const buildPgliteTemplate = async (root: string): Promise<{ dir: string; tarball: string }> => {
  const dir = path.join(root, "data");
  const tarball = path.join(root, "data.tar");
  await (await openPgliteStore({ dataDir: dir })).close();
  const dump = await dumpPgliteDataDir(dir);
  await fs.writeFile(tarball, Buffer.from(await dump.arrayBuffer()));
  return { dir, tarball };
};
