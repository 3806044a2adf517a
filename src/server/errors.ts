// The API's one error shape, {"error":{"code","message"}}, and the mapping from runtime refusals to HTTP statuses.
// Requirements: every failure a client can cause gets its own status and a clear message; anything else is a 500
// whose message does not leak internals, nor a secret (redacted); the server stays up either way.
import { redactSecrets } from "../events/redact.ts";

export type ErrorCode =
  | "invalid_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "misdirected"
  | "too_many_streams"
  | "closing"
  | "internal";

const STATUS: Record<ErrorCode, 400 | 401 | 403 | 404 | 409 | 413 | 415 | 421 | 429 | 500 | 503> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  misdirected: 421,
  too_many_streams: 429,
  closing: 503,
  internal: 500,
};

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
  get status() {
    return STATUS[this.code];
  }
}

/** Every message a client reads passes the one redaction: no configured credential leaves in an error. */
export const errorBody = (code: ErrorCode, message: string) => ({ error: { code, message: redactSecrets(message) } });

/** What a thrown value means to the client. */
export const toApiError = (e: unknown): ApiError => {
  if (e instanceof ApiError) return e;
  // Matched by tag, not class, so the server depends on the runtime's public API only.
  if (isRuntimeError(e)) {
    const code: ErrorCode =
      e.reason === "not_found" || e.reason === "unknown_approval"
        ? "not_found"
        : e.reason === "invalid"
          ? "invalid_request"
          : e.reason === "closed"
            ? "closing"
            : "conflict";
    return new ApiError(code, e.message);
  }
  return new ApiError("internal", "The server failed to handle the request; it is still up.");
};

const isRuntimeError = (e: unknown): e is { reason: string; message: string } =>
  typeof e === "object" && e !== null && (e as { _tag?: unknown })._tag === "RuntimeError";
