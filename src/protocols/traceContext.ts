// The W3C trace context as the agent protocols carry it: a `traceparent` string in MCP's `_meta` or an HTTP header.
// Requirements: only a well-formed version-00 traceparent is taken (anything else is ignored, never stored).
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The traceparent a header or `_meta` value carries, or undefined when it is absent or malformed. */
export const readTraceparent = (value: unknown): string | undefined => {
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== "string") return undefined;
  const t = text.trim().toLowerCase();
  return TRACEPARENT.test(t) ? t : undefined;
};
