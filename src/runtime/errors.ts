// The runtime's own refusals: bad input or a state that forbids the command, never a crash.

/** Why a command was refused: bad input from the caller, never a crash. */
export class RuntimeError extends Error {
  readonly _tag = "RuntimeError" as const;
  /** For bad input: the field that was refused and what it should have been. */
  readonly field: string | null;
  readonly expected: string | null;
  constructor(
    readonly reason: "not_found" | "invalid" | "closed" | "busy" | "unknown_approval" | "already_decided" | "run_ended",
    message: string,
    detail: { field?: string; expected?: string } = {},
  ) {
    super(message);
    this.name = "RuntimeError";
    this.field = detail.field ?? null;
    this.expected = detail.expected ?? null;
  }
}
