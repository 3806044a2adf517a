// A bench module that cannot run here (a missing browser, a missing server binary) says why instead of failing the run.

/** Thrown by a module's `run()` before it measures anything: main prints the reason and goes on with the others. */
export class BenchSkipped extends Error {
  readonly _tag = "BenchSkipped" as const;
}
