// The CLI's own error (a user mistake or an unusable store) and the one line every failure is shown as.
import { ZodError, z } from "zod";
import { StoreError, EventDecodeError } from "../events/errors.ts";

/** Exit codes: 1 for a refused or failed command, 2 for a bad command line. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** An error the user can fix; shown as one line, never with a stack. */
export class CliError extends Error {
  readonly _tag = "CliError" as const;
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = "CliError";
  }
}

export const usageError = (message: string, command?: string): CliError =>
  new CliError(`${message}${command ? ` (see: actorzero ${command} --help)` : ""}`, EXIT.usage);

/** The one line shown for any failure, and the exit code that goes with it. Stacks only with ACTORZERO_DEBUG=1. */
export const describeFailure = (e: unknown): { line: string; exitCode: number; expected: boolean } => {
  if (e instanceof CliError) return { line: e.message, exitCode: e.exitCode, expected: true };
  if (e instanceof StoreError) {
    const line =
      e.reason === "locked" ? e.message.replace(/^data dir /, "the data dir ") : `the event log: ${e.message}`;
    return { line, exitCode: EXIT.failed, expected: true };
  }
  // By tag, so that loading this file does not load the runtime.
  const tag = (e as { _tag?: unknown } | null)?._tag;
  if (e instanceof Error && (tag === "RuntimeError" || tag === "ConfigError"))
    return { line: e.message, exitCode: EXIT.failed, expected: true };
  if (e instanceof EventDecodeError)
    return { line: `the log holds an unreadable event: ${e.message}`, exitCode: EXIT.failed, expected: true };
  if (e instanceof ZodError)
    return { line: z.prettifyError(e).replace(/\s*\n\s*/g, "; "), exitCode: EXIT.usage, expected: true };
  const message = e instanceof Error ? e.message : String(e);
  return {
    line: `internal error: ${message} (run with ACTORZERO_DEBUG=1 for details)`,
    exitCode: EXIT.failed,
    expected: false,
  };
};
