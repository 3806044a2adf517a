// One simple-protocol message sent straight into PGlite's WebAssembly, its answer read here: the embedded store's appends.
//
// PGlite's `exec` wraps a message in three mutexes, serialises the SQL a character at a time, sends a
// Sync message the simple protocol does not need (a second trip into WebAssembly), builds an object per
// protocol message and runs type parsers over the rows. For an append (one statement of a few KB, one
// JSON value back) that cost a one-event append 14% of its CPU and a four-event one 5% (measured in
// one process, alternating blocks of appends with and without it).
//
// Requirements:
// - Serialised as `exec` is: under PGlite's transaction and query mutexes, so a user's `sql.transaction`
//   runs whole before or after the message, never around it.
// - The message is PostgreSQL's Query ('Q'): its statements run in order in one implicit transaction;
//   the backend's own ReadyForQuery ends the answer (PGlite sends it when due).
// - One result per statement that ran, its rows keyed by column name: json and jsonb values parsed,
//   every other value as the text the server sent, NULL as null.
// - An ErrorResponse rejects with an Error carrying the server's fields (`code` is the SQLSTATE,
//   `detail`, `hint`, `severity`); the statements after it did not run and nothing of the message committed.
// - Only what the store needs: no parameters, no COPY, no binary formats.
import type { PGlite } from "@electric-sql/pglite";

export type RawResult = { rows: Record<string, unknown>[] };

/** An error the server answered with (an ErrorResponse), with its fields as node-postgres names them. */
export class PgliteServerError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly severity: string | undefined,
    readonly detail: string | undefined,
    readonly hint: string | undefined,
  ) {
    super(message);
    this.name = "PgliteServerError";
  }
}

const JSON_OIDS = new Set([114, 3802]);
const decoder = new TextDecoder();

/** PostgreSQL's Query message: 'Q', its length (itself included), the SQL as a NUL-terminated UTF-8 string. */
export const queryMessage = (sql: string): Uint8Array => {
  const length = Buffer.byteLength(sql, "utf8");
  const message = Buffer.allocUnsafe(1 + 4 + length + 1);
  message[0] = 0x51; // 'Q'
  message.writeInt32BE(4 + length + 1, 1);
  message.write(sql, 5, length, "utf8");
  message[5 + length] = 0;
  return message;
};

/** The results of a Query message's answer, or the error it holds. */
export const readAnswer = (bytes: Uint8Array): RawResult[] => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const malformed = () => new Error("PGlite answered with a malformed protocol message");
  const cstring = (at: number): [string, number] => {
    const end = bytes.indexOf(0, at);
    if (end < 0) throw malformed();
    return [decoder.decode(bytes.subarray(at, end)), end + 1];
  };
  const results: RawResult[] = [];
  let columns: { name: string; json: boolean }[] = [];
  let rows: Record<string, unknown>[] = [];
  let error: PgliteServerError | undefined;
  for (let at = 0; at < bytes.length;) {
    const type = bytes[at]!;
    const end = at + 1 + view.getInt32(at + 1);
    if (end < at + 5 || end > bytes.length) throw malformed();
    let p = at + 5;
    if (type === 0x54) {
      // 'T' RowDescription: name, table oid, column number, type oid, size, modifier, format
      const count = view.getInt16(p);
      p += 2;
      columns = [];
      for (let i = 0; i < count; i++) {
        const [name, next] = cstring(p);
        columns.push({ name, json: JSON_OIDS.has(view.getInt32(next + 6)) });
        p = next + 18;
      }
    } else if (type === 0x44) {
      // 'D' DataRow: a length (-1 for NULL) and the text of each column
      const count = view.getInt16(p);
      p += 2;
      const row: Record<string, unknown> = {};
      for (let i = 0; i < count; i++) {
        const length = view.getInt32(p);
        p += 4;
        const column = columns[i]!;
        if (length < 0) {
          row[column.name] = null;
          continue;
        }
        const text = decoder.decode(bytes.subarray(p, p + length));
        row[column.name] = column.json ? JSON.parse(text) : text;
        p += length;
      }
      rows.push(row);
    } else if (type === 0x43 || type === 0x49) {
      // 'C' CommandComplete, 'I' EmptyQueryResponse: one statement's result is whole
      results.push({ rows });
      rows = [];
      columns = [];
    } else if (type === 0x45) {
      // 'E' ErrorResponse: one-byte field codes, each with a string, then a NUL
      const fields: Record<string, string> = {};
      while (p < end && bytes[p] !== 0) {
        const [value, next] = cstring(p + 1);
        fields[String.fromCharCode(bytes[p]!)] = value;
        p = next;
      }
      error ??= new PgliteServerError(
        fields["M"] ?? "unknown error",
        fields["C"],
        fields["S"],
        fields["D"],
        fields["H"],
      );
    }
    // Anything else ('Z' ReadyForQuery, 'N' notices, 'S' parameter changes, 'A' notifications) carries no result.
    at = end;
  }
  if (error) throw error;
  return results;
};

/**
 * Sends `sql` (one or more statements, no parameters) as one Query message and answers with a result per
 * statement, as `db.exec` would for what the store sends.
 *
 * Through `execProtocolRawStream`: `execProtocolRawSync` alone would also run PGlite's own parser over the
 * answer and keep what it parsed until PGlite's next `query` or `exec`, which a store that only appends
 * may never send. No `syncToFs`: the store's file systems (memory, and NODEFS for a data dir) write
 * through, and theirs does nothing.
 *
 * @example
 * const [{ rows }] = await execRaw(db, "SELECT 1 AS one");
 */
export const execRaw = (db: PGlite, sql: string): Promise<RawResult[]> =>
  db._runExclusiveTransaction(() =>
    db._runExclusiveQuery(async () => {
      const chunks: Uint8Array[] = [];
      // The bytes are a view of PGlite's memory, valid only during the call: copied.
      await db.execProtocolRawStream(queryMessage(sql), {
        syncToFs: false,
        onRawData: (bytes) => void chunks.push(bytes.slice()),
      });
      return readAnswer(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    }),
  );
