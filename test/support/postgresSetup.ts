// Vitest global setup: a PostgreSQL server for the tests that need one (ACTORZERO_PG_URL, or a throwaway cluster).
//
// Provides `actorzeroPostgres`: `{ url }` (an admin URL on which each test file creates its own
// database) or `{ unavailable }` (why there is none). See test/support/postgres.ts.
import type { TestProject } from "vitest/node";
import { type PgCluster, PgClusterUnavailable, startPgCluster } from "../../bench/support/pgCluster.ts";

declare module "vitest" {
  export interface ProvidedContext {
    actorzeroPostgres: { url: string; unavailable?: undefined } | { url?: undefined; unavailable: string };
  }
}

export default async function setup(project: TestProject) {
  if (process.env.ACTORZERO_TEST_QUICK === "1") {
    project.provide("actorzeroPostgres", {
      unavailable: "npm run test:quick leaves PostgreSQL out (npm test runs it)",
    });
    return;
  }
  const external = process.env.ACTORZERO_PG_URL;
  if (external) {
    project.provide("actorzeroPostgres", { url: external });
    return;
  }
  let cluster: PgCluster;
  try {
    cluster = await startPgCluster();
  } catch (e) {
    const reason = e instanceof PgClusterUnavailable ? e.message : `cannot start PostgreSQL: ${(e as Error).message}`;
    project.provide("actorzeroPostgres", { unavailable: reason });
    return;
  }
  project.provide("actorzeroPostgres", { url: cluster.url });
  return async () => {
    await cluster.stop();
  };
}
