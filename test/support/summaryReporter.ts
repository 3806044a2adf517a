// Prints the run's counts as one plain closing line ("N passed, N failed, N skipped"), after vitest's own summary.
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      let failedHere = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed += 1;
        else if (state === "failed") failedHere += 1;
        else skipped += 1;
      }
      // A file that failed with no test failing (it did not load, or a hook such as beforeAll failed and its
      // tests were skipped) still fails the run: it counts as one failure, so the line never says 0 failed then.
      if (module.state() === "failed" && failedHere === 0) failedHere = 1;
      failed += failedHere;
    }
    failed += unhandledErrors.length;
    // After the default reporter's summary, so it is the last line of the run.
    setImmediate(() => process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`));
  }
}
