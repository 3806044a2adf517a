// Prints the run's counts as one plain closing line ("N passed, N failed, N skipped"), after vitest's own summary.
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed += 1;
        else if (state === "failed") failed += 1;
        else skipped += 1;
      }
      // A file that failed to load has no tests to count; it still fails the run.
      if (module.state() === "failed" && [...module.children.allTests()].length === 0) failed += 1;
    }
    failed += unhandledErrors.length;
    // After the default reporter's summary, so it is the last line of the run.
    setImmediate(() => process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`));
  }
}
