import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each PGlite instance holds ~770 MB; two workers fit the 2-core machine.
    maxWorkers: 2,
    reporters: ["default"],
    // globalSetup.ts builds the PGlite template that test/support/pglite.ts copies (one initdb per
    // run); postgresSetup.ts starts a throwaway PostgreSQL server (or uses ACTORZERO_PG_URL).
    globalSetup: ["test/support/globalSetup.ts", "test/support/postgresSetup.ts"],
  },
});
