import { defineConfig } from "vitest/config";

// `npm run test:quick`, the everyday loop: leaves out the files that run several processes, fuzzing and the
// model-based sequences, and starts no PostgreSQL server (its blocks skip, saying so). `npm test` runs all.
const quick = process.env.ACTORZERO_TEST_QUICK === "1";
const SLOW_FILES = ["test/multiprocess/**", "test/recovery/crashResume.test.ts", "test/testing/fuzz.test.ts", "test/testing/modelBased.test.ts"];

export default defineConfig({
  // In this repository the package name means the sources (the published exports point at dist/).
  resolve: {
    alias: [
      { find: /^actorzero$/, replacement: new URL("./src/index.ts", import.meta.url).pathname },
      { find: /^actorzero\/testing$/, replacement: new URL("./src/testing/index.ts", import.meta.url).pathname },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    exclude: quick ? ["**/node_modules/**", ...SLOW_FILES] : ["**/node_modules/**"],
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
