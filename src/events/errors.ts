// The log's few error types, each tagged (`_tag`) so Effect programs can catch them, each with a `reason`.
import type { ExpectedVersion } from "./store.ts";

/** Another writer appended to the stream first; reload and retry. */
export class ConcurrencyError extends Error {
  readonly _tag = "ConcurrencyError" as const;
  readonly reason = "conflict" as const;
  readonly retryable = true;
  constructor(
    readonly streamId: string,
    readonly expectedVersion: ExpectedVersion,
    readonly actualVersion: number,
  ) {
    super(`Stream '${streamId}' is at version ${actualVersion}, expected ${String(expectedVersion)}.`);
    this.name = "ConcurrencyError";
  }
}

/** A stored row that is not a valid event of a known type: names the row so it can be found. */
export class EventDecodeError extends Error {
  readonly _tag = "EventDecodeError" as const;
  readonly reason = "undecodable" as const;
  constructor(
    readonly globalPosition: number,
    readonly eventType: string,
    readonly issues: readonly { path: readonly PropertyKey[]; message: string }[],
  ) {
    super(
      `Event at global_position ${globalPosition} (type '${eventType}') cannot be decoded: ` +
        issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; "),
    );
    this.name = "EventDecodeError";
  }
}

/** An event refused before it was written (it does not match its schema). */
export class EventValidationError extends Error {
  readonly _tag = "EventValidationError" as const;
  readonly reason = "invalid" as const;
  constructor(
    readonly eventType: string,
    readonly issues: readonly { path: readonly PropertyKey[]; message: string }[],
  ) {
    super(
      `Event '${eventType}' is not valid: ` +
        issues.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; "),
    );
    this.name = "EventValidationError";
  }
}

/** The database failed or refused (closed store, data dir in use, connection lost). */
export class StoreError extends Error {
  readonly _tag = "StoreError" as const;
  constructor(
    /**
     * `tampered`: open found the log changed since it was last checked (see sealer.ts) and would not write to it.
     * `disk_full`: the disk holding the log has no room left for it (see diskReserve.ts); nothing was written,
     * and the same call succeeds once space is freed.
     */
    readonly reason: "closed" | "locked" | "unavailable" | "refused" | "tampered" | "disk_full" | "unknown",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StoreError";
  }
}

/** SQLSTATE `disk_full` (class 53, insufficient resources), as PostgreSQL and PGlite raise it. */
export const SQLSTATE_DISK_FULL = "53100";

/** A driver's or Node's error that says the disk is full, as StoreError `disk_full`; null for any other. */
export const diskFullError = (e: unknown, where: string): StoreError | null => {
  const code = (e as { code?: unknown } | null)?.code;
  if (code !== SQLSTATE_DISK_FULL && code !== "ENOSPC") return null;
  return new StoreError(
    "disk_full",
    `the disk holding ${where} is full (${(e as Error).message}); free some space and try again`,
    { cause: e },
  );
};
