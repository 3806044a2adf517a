// Validation on write, a cheap check on read of trusted rows, a full parse after upcasting and on audit (verifyRow).
import {
  DomainEvent,
  type EventType,
  type NewEvent,
  type RecordedEvent,
  EventMetadata,
  emptyMetadata,
} from "./schema.ts";
import { EventDecodeError, EventValidationError } from "./errors.ts";
import { quickCheck } from "./quickCheck.ts";
import { storable } from "./storable.ts";
import type { ContextId, EventId } from "./ids.ts";

/** The schema version written today for each type. Bump it and add an upcaster when a shape changes. */
export const CURRENT_SCHEMA_VERSION: Readonly<Record<EventType, number>> = Object.freeze(
  Object.fromEntries(DomainEvent.options.map((o) => [o.shape.type.value, 1])) as Record<EventType, number>,
);

/** An upcaster turns the data of `fromVersion` into the data of `fromVersion + 1`. */
export type Upcaster = (data: unknown) => unknown;
export type Upcasters = Partial<Record<string, Readonly<Record<number, Upcaster>>>>;

/** Every event type is still at version 1, so no upcaster is needed yet. */
export const UPCASTERS: Upcasters = {};

/** A row as the database returns it. */
export type EventRow = {
  global_position: string | number | bigint;
  event_id: string;
  stream_id: string;
  stream_version: number;
  type: string;
  schema_version: number;
  data: unknown;
  metadata: unknown;
  recorded_at: Date | string;
};

/** A row as the readers select it (EVENT_ROW_JSON in sql.ts): its columns as one JSON array. */
export type JsonEventRow = { row: string };

/** The EventRow a JsonEventRow holds; `recorded_at` arrives as ISO text, which `decodeRow` reads as such. */
export const eventRowOf = ({ row }: JsonEventRow): EventRow => {
  const [global_position, event_id, stream_id, stream_version, type, schema_version, data, metadata, recorded_at] =
    JSON.parse(row) as unknown[];
  return {
    global_position,
    event_id,
    stream_id,
    stream_version,
    type,
    schema_version,
    data,
    metadata,
    recorded_at,
  } as EventRow;
};

/** Validates an event before it is written; returns the parsed data (unknown keys stripped, text made storable). */
export const encodeEvent = (
  event: NewEvent,
): { type: EventType; data: unknown; schemaVersion: number; metadata: EventMetadata } => {
  const parsed = DomainEvent.safeParse({ type: event.type, data: event.data });
  if (!parsed.success) throw new EventValidationError(String(event.type), parsed.error.issues);
  const metadata = { ...emptyMetadata, ...event.metadata };
  const meta = EventMetadata.safeParse(metadata);
  if (!meta.success) throw new EventValidationError(String(event.type), meta.error.issues);
  // Text JSONB cannot hold (a NUL, a lone surrogate) is replaced rather than failing the append.
  return {
    type: parsed.data.type,
    data: storable(parsed.data.data),
    schemaVersion: CURRENT_SCHEMA_VERSION[parsed.data.type],
    metadata: storable(meta.data),
  };
};

/** What decoding knows about versions: today's version of each type and how to climb to it. */
export type SchemaVersions = { current: Readonly<Record<string, number>>; upcasters: Upcasters };
export const SCHEMA_VERSIONS: SchemaVersions = { current: CURRENT_SCHEMA_VERSION, upcasters: UPCASTERS };

/**
 * Decodes a stored row into a typed event, upcasting old versions; a bad row is an EventDecodeError.
 *
 * Rows the store wrote were validated on append, so a row at today's version is trusted: it gets the
 * cheap `quickCheck` (top-level field kinds), not a full zod parse. A row that was upcast is parsed in
 * full (the upcaster's output is new data). `verifyRow` parses any row in full, for audits.
 */
export const decodeRow = (row: EventRow, versions: SchemaVersions = SCHEMA_VERSIONS): RecordedEvent => {
  const globalPosition = Number(row.global_position);
  const { upcasters } = versions;
  const current = (versions.current as Record<string, number | undefined>)[row.type];
  if (current === undefined) {
    throw new EventDecodeError(globalPosition, row.type, [
      { path: ["type"], message: `unknown event type '${row.type}'` },
    ]);
  }
  let data = row.data;
  let version = row.schema_version;
  if (version > current) {
    throw new EventDecodeError(globalPosition, row.type, [
      { path: ["schema_version"], message: `version ${version} is newer than this runtime knows (${current})` },
    ]);
  }
  if (version === current) {
    const issues = quickCheck(row.type, data, row.metadata);
    if (issues.length > 0) throw new EventDecodeError(globalPosition, row.type, issues);
    return recorded(row, globalPosition, { type: row.type, data }, version, row.metadata as EventMetadata);
  }
  while (version < current) {
    const up = upcasters[row.type]?.[version];
    if (!up) {
      throw new EventDecodeError(globalPosition, row.type, [
        { path: ["schema_version"], message: `no upcaster from version ${version}` },
      ]);
    }
    data = up(data);
    version += 1;
  }
  return parsed(row, globalPosition, data, version);
};

/** Decodes a row with a full zod parse of its data and metadata, whatever its version: what an audit runs. */
export const verifyRow = (row: EventRow, versions: SchemaVersions = SCHEMA_VERSIONS): RecordedEvent => {
  const event = decodeRow(row, versions);
  return parsed(row, event.globalPosition, event.data, event.schemaVersion);
};

/**
 * The first of `events` that fails a full parse, as an EventDecodeError, or undefined: explains a
 * fold that threw on a trusted row (one written around the store, e.g. by raw SQL).
 */
export const firstInvalid = (events: readonly RecordedEvent[]): EventDecodeError | undefined => {
  for (const e of events) {
    const event = DomainEvent.safeParse({ type: e.type, data: e.data });
    if (!event.success) return new EventDecodeError(e.globalPosition, e.type, event.error.issues);
  }
  return undefined;
};

const parsed = (row: EventRow, globalPosition: number, data: unknown, version: number): RecordedEvent => {
  const event = DomainEvent.safeParse({ type: row.type, data });
  if (!event.success) throw new EventDecodeError(globalPosition, row.type, event.error.issues);
  const meta = EventMetadata.safeParse(row.metadata);
  if (!meta.success) {
    throw new EventDecodeError(
      globalPosition,
      row.type,
      meta.error.issues.map((i) => ({ ...i, path: ["metadata", ...i.path] })),
    );
  }
  return recorded(row, globalPosition, event.data, version, meta.data);
};

const recorded = (
  row: EventRow,
  globalPosition: number,
  event: { type: string; data: unknown },
  version: number,
  metadata: EventMetadata,
) =>
  ({
    type: event.type,
    data: event.data,
    globalPosition,
    streamId: row.stream_id as ContextId,
    streamVersion: row.stream_version,
    eventId: row.event_id as EventId,
    schemaVersion: version,
    metadata,
    recordedAt:
      row.recorded_at instanceof Date ? row.recorded_at.toISOString() : new Date(row.recorded_at).toISOString(),
  }) as RecordedEvent;
