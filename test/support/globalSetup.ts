// Vitest global setup: builds ONE PGlite template (the event log schema) per test run.
//
// The template starts from the store's cached image (no initdb once the image is cached); a copy of
// it is still cheaper than loading the image per test. Provides
// `actorzeroPgliteTemplate`: `{ dir, tarball }`, a data dir to copy and the same as a tar file
// (PGlite's `loadDataDir`) for in-memory stores. See test/support/pglite.ts.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { buildPgliteTemplate } from "./pgliteTemplate.ts";

declare module "vitest" {
  export interface ProvidedContext {
    actorzeroPgliteTemplate: { dir: string; tarball: string };
  }
}

export default async function setup(project: TestProject) {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "actorzero-pglite-template-"));
  project.provide("actorzeroPgliteTemplate", await buildPgliteTemplate(root));
  return async () => {
    await fs.rm(root, { recursive: true, force: true });
  };
}
