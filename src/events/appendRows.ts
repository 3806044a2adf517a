// What both SQL adapters check and encode before an append is sent: an invalid event writes nothing.
import { randomUUID } from "node:crypto";
import { encodeEvent } from "./codec.ts";
import { EventValidationError } from "./errors.ts";
import { EventId } from "./ids.ts";
import type { NewEvent } from "./schema.ts";
import type { AppendRow } from "./appendSql.ts";
import type { ExpectedVersion } from "./store.ts";

/** Validates the arguments and every event, then returns the rows to send (fresh ids where none were given). */
export const appendRows = (streamId: string, events: readonly NewEvent[], expected: ExpectedVersion): AppendRow[] => {
  if (typeof expected === "number" && !(Number.isInteger(expected) && expected >= 0)) {
    throw new RangeError(`expectedVersion must be an integer ≥ 0, "no_stream" or "any"; got ${expected}`);
  }
  if (streamId.length === 0) throw new RangeError("streamId must not be empty");
  return events.map((event): AppendRow => {
    const encoded = encodeEvent(event);
    const eventId = event.eventId ?? randomUUID();
    if (!EventId.safeParse(eventId).success) {
      throw new EventValidationError(encoded.type, [
        { path: ["eventId"], message: `not a UUID: '${String(eventId)}'` },
      ]);
    }
    return {
      event_id: eventId,
      type: encoded.type,
      schema_version: encoded.schemaVersion,
      data: encoded.data,
      metadata: encoded.metadata,
    };
  });
};
