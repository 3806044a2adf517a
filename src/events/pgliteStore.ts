// The event store on PGlite (embedded PostgreSQL in WASM): the only file that imports @electric-sql/pglite.
import fs from "node:fs";
import path from "node:path";
import { PGlite, type Transaction } from "@electric-sql/pglite";
import type { EventRow } from "./codec.ts";
import { DEFAULT_PAGE, JSON_ROWS, sqlReads } from "./sqlReads.ts";
import { acquireDataDirLock, type DataDirLock } from "./dataDirLock.ts";
import { inspectDataDir, NEW_DATA_DIR_BYTES, type DataDirState } from "./pgliteDataDir.ts";
import {
  IMAGE_PARTIAL_MARK,
  pgliteImageFs,
  pgliteStartParams,
  walSegmentBytes,
  writePgliteImage,
} from "./pgliteImage.ts";
import { pgliteWasmModule } from "./pgliteWasm.ts";
import { ConcurrencyError, diskFullError, StoreError } from "./errors.ts";
import { checkSpaceToOpen, diskReserve, type DiskReserve } from "./diskReserve.ts";
import { appendBatcher } from "./appendBatcher.ts";
import { AppendHooks, type AppendHook } from "./appendHooks.ts";
import { execRaw } from "./pgliteRawExec.ts";
import { appendRows } from "./appendRows.ts";
import { appendedEvents } from "./recordedRows.ts";
import { schemaAction } from "./schemaCheck.ts";
import type { NewEvent, RecordedEvent } from "./schema.ts";
import { SCHEMA_EXISTS_QUERY, SCHEMA_SQL, SCHEMA_VERSION_QUERY, SQLSTATE_EVENT_ID_REUSED } from "./sql.ts";
import { type SendAppend, type AppendOutcome, appendStatement, runAppend } from "./appendSql.ts";
import { type LogVerification, type VerifyLogOptions, verifyEventLog } from "./verifyLog.ts";
import { readyForWriting, recordVerified, Sealer } from "./sealer.ts";
import type { AppendResult, EventStore, ExpectedVersion, SqlExecutor, Unsubscribe } from "./store.ts";

export type PgliteStoreOptions = {
  /** A directory holding the database (created when missing); in memory when absent. */
  dataDir?: string;
  /** A data dir tarball (from PGlite's `dumpDataDir`) to start from instead of an empty database. */
  loadDataDir?: Blob;
  /** The clock that stamps `recorded_at`; real time by default. */
  now?: () => Date;
  /** Called when a subscriber's listener throws (that subscription then ends); logs by default. */
  onSubscriberError?: (error: unknown) => void;
  /** `existing`: open only a log that is there, as it is (no schema created or upgraded), e.g. to verify it; implies `readOnly`. */
  schema?: "create" | "existing";
  /**
   * Opened to read: no check at open refuses it and nothing is sealed. Opening for writing (the default)
   * checks what the log added since it was last found intact, and refuses a changed log (StoreError `tampered`).
   */
  readOnly?: boolean;
};

/**
 * Opens the event log in PGlite. One process at a time may open a data dir: another one gets
 * StoreError `locked` naming the holder; the lock of a process that died is taken over.
 *
 * @example
 * const store = await openPgliteStore({ dataDir: "./.actorzero" });
 * await store.append(contextId, [event], { expectedVersion: "no_stream" });
 */
export const openPgliteStore = async (options: PgliteStoreOptions = {}): Promise<EventStore> => {
  // Inspected before the lock, so a foreign dir is refused without a lock file put in it, and again
  // under the lock, as another process may have made it a database in between.
  if (options.dataDir !== undefined) inspectDataDir(options.dataDir);
  const lock = options.dataDir === undefined ? undefined : acquireDataDirLock(options.dataDir);
  let db: PGlite;
  try {
    const found = options.dataDir === undefined ? undefined : inspectDataDir(options.dataDir);
    // PGlite writes as it starts: on a disk without the reserve it would meet ENOSPC (see diskReserve.ts).
    if (options.dataDir !== undefined) checkSpaceToOpen(options.dataDir, found === "database" ? 0 : NEW_DATA_DIR_BYTES);
    db = await createDb(options, found);
    await ensureSchema(db, options.dataDir, options.schema ?? "create");
  } catch (e) {
    lock?.release();
    if (e instanceof StoreError) throw e;
    throw (
      diskFullError(e, options.dataDir ?? "the log") ??
      new StoreError(
        "unavailable",
        `cannot open PGlite${options.dataDir ? ` at ${options.dataDir}` : ""}: ${(e as Error).message}`,
        { cause: e },
      )
    );
  }
  const reserve = options.dataDir === undefined ? undefined : diskReserve(options.dataDir);
  const store = new PgliteStore(
    db,
    lock,
    reserve,
    options.now ?? (() => new Date()),
    options.onSubscriberError ?? defaultSubscriberError,
  );
  return readyForWriting(store, options);
};

/**
 * A new database (in memory, or a new data dir) starts from a tarball, never from initdb: the
 * caller's, else the cached image. A new data dir gets the image written by Node's fs, then is opened
 * as an existing one is: as it is, with WAL settings that fit its segment size.
 */
const createDb = async (options: PgliteStoreOptions, found: DataDirState | undefined): Promise<PGlite> => {
  const common = {
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    pgliteWasmModule: pgliteWasmModule(),
  };
  if (options.dataDir !== undefined && found !== "database" && options.loadDataDir === undefined) {
    await writePgliteImage(options.dataDir);
    found = "database";
  }
  if (found === "database") {
    // A write of the image that ended between its last file and removing its mark left a whole database.
    fs.rmSync(path.join(options.dataDir!, IMAGE_PARTIAL_MARK), { force: true });
    return PGlite.create({ ...common, startParams: pgliteStartParams(walSegmentBytes(options.dataDir!)) });
  }
  // A caller's tarball may come from a data dir with 16 MB segments: keep PostgreSQL's WAL sizes then.
  if (options.loadDataDir !== undefined)
    return PGlite.create({ ...common, loadDataDir: options.loadDataDir, startParams: pgliteStartParams(Infinity) });
  return PGlite.create({ ...common, fs: await pgliteImageFs(), startParams: pgliteStartParams() });
};

/** What a seal may write, counted against the disk's reserve as an append's SQL text is. */
const SEAL_BYTES = 8192;

/**
 * A tarball of a closed data dir, to pass as `loadDataDir` (e.g. to start in-memory stores from a
 * prepared database without paying for initdb each time). Holds the data dir's lock meanwhile.
 */
export const dumpPgliteDataDir = async (dataDir: string): Promise<Blob> => {
  const lock = acquireDataDirLock(dataDir);
  try {
    const db = await PGlite.create({
      dataDir,
      pgliteWasmModule: pgliteWasmModule(),
      startParams: pgliteStartParams(walSegmentBytes(dataDir)),
    });
    try {
      return await db.dumpDataDir("none");
    } finally {
      await db.close();
    }
  } finally {
    lock.release();
  }
};

const defaultSubscriberError = (error: unknown) =>
  console.error("actorzero: an event subscriber failed and was stopped:", error);

const ensureSchema = async (db: PGlite, dataDir: string | undefined, schema: "create" | "existing") => {
  const exists = (await db.query<{ exists: boolean }>(SCHEMA_EXISTS_QUERY)).rows[0]?.exists === true;
  const version = exists
    ? ((await db.query<{ version: number | null }>(SCHEMA_VERSION_QUERY)).rows[0]?.version ?? null)
    : null;
  let action: ReturnType<typeof schemaAction>;
  try {
    action = schemaAction(version, schema, dataDir === undefined ? "" : ` in ${dataDir}`);
  } catch (e) {
    await db.close();
    throw e;
  }
  if (action === "run-schema-sql") await db.exec(SCHEMA_SQL);
};

type Subscription = {
  cursor: number;
  listener: (event: RecordedEvent) => void | Promise<void>;
  active: boolean;
  running: boolean;
  pending: boolean;
};

class PgliteStore implements EventStore {
  readonly sql: SqlExecutor;
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #subscriptions = new Set<Subscription>();
  /** Absent while opened to read (or before open's check passed). */
  #sealer: Sealer | undefined;

  constructor(
    private readonly db: PGlite,
    private readonly lock: DataDirLock | undefined,
    /** Free space kept on a data dir's disk (absent in memory): an append that would eat into it is refused. */
    private readonly reserve: DiskReserve | undefined,
    private readonly now: () => Date,
    private readonly onSubscriberError: (error: unknown) => void,
  ) {
    this.sql = this.#executor(db);
  }

  /** One connection: every committed position is final, so the head is the settled horizon. */
  startSealing() {
    // A seal writes a row: on a disk down to its reserve it is skipped (and made at the next one) rather than
    // let PGlite meet ENOSPC.
    const sealQuery = <R>(sql: string, params: unknown[]) => {
      this.reserve?.check(SEAL_BYTES);
      return this.#query<R>(sql, params);
    };
    this.#sealer = new Sealer(sealQuery, () => this.headPosition());
  }

  async append(
    streamId: string,
    given: readonly NewEvent[],
    options: { expectedVersion: ExpectedVersion },
  ): Promise<AppendResult> {
    this.#guard();
    const expected = options.expectedVersion;
    const events = this.#hooks.stamp(streamId, given);
    const rows = appendRows(streamId, events, expected);
    const recordedAt = this.now();
    let outcome: AppendOutcome;
    let recorded: RecordedEvent[] = [];
    try {
      outcome = await runAppend({ send: this.#sendAppend, query: this.#query }, streamId, expected, rows, recordedAt);
      if (!outcome.conflict)
        recorded = await appendedEvents(this.#query, streamId, expected, rows, outcome, recordedAt);
    } catch (e) {
      throw this.#mapError(e);
    }
    if (outcome.conflict) throw new ConcurrencyError(streamId, expected, outcome.version);
    this.#hooks.appended(streamId, events);
    this.#sealer?.soon();
    this.#wakeSubscribers();
    return { nextExpectedVersion: outcome.version, positions: outcome.positions.map(Number), events: recorded };
  }

  readonly #hooks = new AppendHooks();

  onAppend(hook: AppendHook): Unsubscribe {
    return this.#hooks.add(hook);
  }

  readonly #query = async <R>(sql: string, params: unknown[]): Promise<R[]> =>
    (await this.db.query<R>(sql, params)).rows;

  /** Appends queued while one is in flight go together: one message, one transaction (see appendBatcher.ts). */
  readonly #appends = appendBatcher((sql) => execRaw(this.db, sql));

  /** An append goes as a simple-protocol statement (see appendStatement), grouped with the appends queued beside it. */
  readonly #sendAppend: SendAppend = (params) => {
    const statement = appendStatement(params);
    // Before PGlite sees it: PGlite that meets ENOSPC in its WAL never returns (see diskReserve.ts).
    this.reserve?.check(statement.length);
    return this.#appends.run(statement);
  };

  readonly #reads = sqlReads((sql, params) => this.#rows(sql, params), JSON_ROWS);
  readonly readStream = this.#reads.readStream;
  readonly streamVersion = this.#reads.streamVersion;
  readonly readAll = this.#reads.readAll;
  readonly iterateAll = this.#reads.iterateAll;
  readonly headPosition = this.#reads.headPosition;
  /** Opened for writing, seals what has settled first, and records a passing whole check as open's starting point. */
  readonly verify = async (options?: VerifyLogOptions): Promise<LogVerification> => {
    if (this.#sealer) await this.#sealer.seal();
    const result = await verifyEventLog(this.sql, options);
    if (this.#sealer && result.ok && !options?.from) await recordVerified(this.sql, result.head);
    return result;
  };

  /**
   * Replays the stored events after `after`, then delivers each new one. PGlite runs one message
   * at a time in this process, so every append has committed (or failed) before the next read:
   * reading on from the last delivered position after each of our appends never skips an event.
   * Events written through `sql` directly are delivered on the next append.
   */
  subscribe(after: number, listener: (event: RecordedEvent) => void | Promise<void>): Unsubscribe {
    this.#guard();
    const sub: Subscription = { cursor: after, listener, active: true, running: false, pending: false };
    this.#subscriptions.add(sub);
    this.#wake(sub);
    return () => {
      sub.active = false;
      this.#subscriptions.delete(sub);
    };
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // The tail this process wrote is sealed before the log is let go: a closed data dir is sealed to its head.
      await this.#sealer?.flush();
      this.#closed = true;
      for (const sub of this.#subscriptions) sub.active = false;
      this.#subscriptions.clear();
      try {
        await this.db.close();
      } finally {
        this.lock?.release();
      }
    })();
    return this.#closing;
  }

  #wakeSubscribers() {
    for (const sub of this.#subscriptions) this.#wake(sub);
  }

  #wake(sub: Subscription) {
    sub.pending = true;
    if (!sub.running) void this.#pump(sub);
  }

  /** Delivers one subscription's backlog, one listener call at a time, until nothing is pending. */
  async #pump(sub: Subscription) {
    sub.running = true;
    try {
      while (sub.pending && sub.active && !this.#closed) {
        sub.pending = false;
        for (;;) {
          const page = await this.readAll(sub.cursor, DEFAULT_PAGE);
          for (const event of page) {
            if (!sub.active || this.#closed) return;
            await sub.listener(event);
            sub.cursor = event.globalPosition;
          }
          if (page.length < DEFAULT_PAGE) break;
        }
      }
    } catch (e) {
      if (sub.active && !this.#closed) {
        sub.active = false;
        this.#subscriptions.delete(sub);
        this.onSubscriberError(e);
      }
    } finally {
      sub.running = false;
    }
  }

  async #rows<R = EventRow>(sql: string, params: unknown[]): Promise<R[]> {
    this.#guard();
    try {
      return (await this.db.query<R>(sql, params)).rows;
    } catch (e) {
      throw this.#mapError(e);
    }
  }

  #guard() {
    if (this.#closed) throw new StoreError("closed", "the event store is closed");
  }

  #mapError(e: unknown): unknown {
    if (this.#closed) return new StoreError("closed", "the event store was closed during the call", { cause: e });
    const code = (e as { code?: string }).code;
    if (code === SQLSTATE_EVENT_ID_REUSED) return new StoreError("refused", (e as Error).message, { cause: e });
    return diskFullError(e, "the log") ?? e;
  }

  /** The SQL door; a transaction inside a transaction runs in the outer one. */
  #executor(q: PGlite | Transaction): SqlExecutor {
    const inTransaction = !(q instanceof PGlite);
    return {
      query: async <R = Record<string, unknown>>(sql: string, params?: unknown[]) => {
        this.#guard();
        const { rows } = await q.query<R>(sql, params);
        return { rows };
      },
      exec: async (sql: string) => {
        this.#guard();
        await q.exec(sql);
      },
      transaction: async <T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> => {
        this.#guard();
        if (inTransaction) return fn(this.#executor(q));
        return (q as PGlite).transaction((tx) => fn(this.#executor(tx)));
      },
    };
  }
}
