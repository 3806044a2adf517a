// The readers every SQL adapter shares: the same statements and decoding, over the adapter's own row query.
import { decodeRow, type EventRow, eventRowOf, type JsonEventRow } from "./codec.ts";
import type { RecordedEvent } from "./schema.ts";
import {
  EVENT_COLUMNS,
  EVENT_ROW_JSON,
  HEAD_POSITION_SQL,
  readAllSql,
  readStreamSql,
  STREAM_VERSION_SQL,
} from "./sql.ts";

/** Runs one statement and returns its rows (the adapter checks that it is open). */
export type RowQuery = <R = EventRow>(sql: string, params: unknown[]) => Promise<R[]>;

/** The default page size of `readAll` and `iterateAll`. */
export const DEFAULT_PAGE = 1000;

/** How an adapter's driver is cheapest to read rows from: what to select, and the EventRow it gives back. */
export type RowFormat<R> = { select: string; toRow: (row: R) => EventRow };
/** The columns one by one: a PostgreSQL server (see EVENT_ROW_JSON in sql.ts). */
export const COLUMN_ROWS: RowFormat<EventRow> = { select: EVENT_COLUMNS, toRow: (row) => row };
/** One JSON text per row: PGlite, whose per-column parse costs twice one JSON.parse of the row. */
export const JSON_ROWS: RowFormat<JsonEventRow> = { select: EVENT_ROW_JSON, toRow: eventRowOf };

export const sqlReads = <R>(rows: RowQuery, format: RowFormat<R>) => {
  const readAllStatement = readAllSql(format.select);
  const readStreamStatement = readStreamSql(format.select);
  const decode = (list: R[]): RecordedEvent[] => list.map((r) => decodeRow(format.toRow(r)));
  const readAll = async (after = 0, limit = DEFAULT_PAGE): Promise<RecordedEvent[]> =>
    decode(await rows<R>(readAllStatement, [after, limit]));
  return {
    readStream: async (streamId: string, fromVersion = 1): Promise<RecordedEvent[]> =>
      decode(await rows<R>(readStreamStatement, [streamId, fromVersion])),
    streamVersion: async (streamId: string): Promise<number> =>
      Number((await rows<{ version: number }>(STREAM_VERSION_SQL, [streamId]))[0]?.version ?? 0),
    readAll,
    /** The whole log after `after`, page by page: never more than one page in memory. */
    async *iterateAll(after = 0, pageSize = DEFAULT_PAGE): AsyncIterable<RecordedEvent> {
      let cursor = after;
      for (;;) {
        const page = await readAll(cursor, pageSize);
        for (const event of page) yield event;
        if (page.length < pageSize) return;
        cursor = page[page.length - 1]!.globalPosition;
      }
    },
    headPosition: async (): Promise<number> =>
      Number((await rows<{ position: string | number }>(HEAD_POSITION_SQL, []))[0]?.position ?? 0),
  };
};
