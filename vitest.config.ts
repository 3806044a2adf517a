import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each PGlite instance holds ~770 MB; two workers fit the 2-core machine.
    maxWorkers: 2,
    reporters: ["default"],
    // Builds the PGlite template that test/support/pglite.ts copies (one initdb per run).
    globalSetup: ["test/support/globalSetup.ts"],
  },
});
