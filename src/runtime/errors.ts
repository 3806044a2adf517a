// The runtime's own refusals: bad input or a state that forbids the command, never a crash.

/** Why a command was refused: bad input from the caller, never a crash. */
export class RuntimeError extends Error {
  readonly _tag = "RuntimeError" as const;
  constructor(
    readonly reason: "not_found" | "invalid" | "closed" | "busy",
    message: string,
  ) {
    super(message);
    this.name = "RuntimeError";
  }
}

