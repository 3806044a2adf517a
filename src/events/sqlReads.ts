// The readers every SQL adapter shares: the same statements and decoding, over the adapter's own row query.
import { decodeRow, type EventRow } from "./codec.ts";
import type { RecordedEvent } from "./schema.ts";
import { HEAD_POSITION_SQL, READ_ALL_SQL, READ_STREAM_SQL, STREAM_VERSION_SQL } from "./sql.ts";

/** Runs one statement and returns its rows (the adapter checks that it is open). */
export type RowQuery = <R = EventRow>(sql: string, params: unknown[]) => Promise<R[]>;

/** The default page size of `readAll` and `iterateAll`. */
export const DEFAULT_PAGE = 1000;

export const sqlReads = (rows: RowQuery) => {
  const readAll = async (after = 0, limit = DEFAULT_PAGE): Promise<RecordedEvent[]> =>
    (await rows(READ_ALL_SQL, [after, limit])).map((r) => decodeRow(r));
  return {
    readStream: async (streamId: string, fromVersion = 1): Promise<RecordedEvent[]> =>
      (await rows(READ_STREAM_SQL, [streamId, fromVersion])).map((r) => decodeRow(r)),
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
