import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each PGlite instance holds ~770 MB; two workers fit the 2-core machine.
    maxWorkers: 2,
    // The last line of a run is the plain count, "N passed, N failed, N skipped".
    reporters: ["default", "./test/support/summaryReporter.ts"],
    // globalSetup.ts builds the PGlite template that test/support/pglite.ts copies (one initdb per
    // run); postgresSetup.ts starts a throwaway PostgreSQL server (or uses ACTORZERO_PG_URL).
    globalSetup: ["test/support/globalSetup.ts", "test/support/postgresSetup.ts"],
  },
});
