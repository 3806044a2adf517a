// Gives a test file its own fresh PostgreSQL database, or skips (fails in CI) when there is no server.
//
// Usage:
//   describeWithPostgres("the PostgreSQL store", () => {
//     const db = usePostgresDatabase();           // created before the file's tests, dropped after
//     it("…", async () => { const store = await openPostgresStore({ url: db.url() }); … });
//   });
// The server is ACTORZERO_PG_URL when set (a URL whose user may CREATE DATABASE), otherwise the
// throwaway cluster of test/support/postgresSetup.ts.
import { afterAll, beforeAll, describe, inject, it } from "vitest";
import { createDatabase, dropDatabase } from "../../bench/support/pgCluster.ts";

const server = inject("actorzeroPostgres");

/** The admin URL of the server, or undefined when there is none. */
export const postgresAdminUrl: string | undefined = server.url;

/**
 * `describe` when a server is there. Without one it skips with the reason printed, except in CI
 * (`CI` set), where the block fails instead: a CI run must not pass without its PostgreSQL tests.
 */
export const describeWithPostgres = (name: string, body: () => void) => {
  if (server.url !== undefined) return describe(name, body);
  const reason = server.unavailable ?? "no PostgreSQL server";
  if (process.env.CI) {
    return describe(name, () => {
      it("has a PostgreSQL server to run against", () => {
        throw new Error(`PostgreSQL tests cannot run in CI: ${reason}`);
      });
    });
  }
  console.warn(`skipping "${name}": ${reason}`);
  return describe.skip(name, body);
};

/** A database of this file's own, created in beforeAll and dropped in afterAll; call inside describeWithPostgres. */
export const usePostgresDatabase = (prefix = "actorzero_test") => {
  let url: string | undefined;
  beforeAll(async () => {
    url = await createDatabase(postgresAdminUrl!, prefix);
  });
  afterAll(async () => {
    if (url) await dropDatabase(url);
  });
  return {
    url: () => {
      if (!url) throw new Error("the test database is created in beforeAll; read it inside a test or hook");
      return url;
    },
    /** Another fresh database (dropped with the file's), for a test that needs an empty log. */
    fresh: async () => {
      const extra = await createDatabase(postgresAdminUrl!, prefix);
      afterAllDrops.push(extra);
      return extra;
    },
  };
};

const afterAllDrops: string[] = [];
afterAll(async () => {
  await Promise.all(afterAllDrops.splice(0).map((u) => dropDatabase(u)));
});
