// The event store on a PostgreSQL server, shared by many runtime processes: the only file that loads `pg` (postgresLogTail.ts takes its clients from here).
import type pg from "pg";
import { schemaAction } from "./schemaCheck.ts";
import { decodeRow, type EventRow } from "./codec.ts";
import { redactSecrets, urlPasswords } from "./redact.ts";
import { COLUMN_ROWS, DEFAULT_PAGE, sqlReads } from "./sqlReads.ts";
import { ConcurrencyError, diskFullError, StoreError } from "./errors.ts";
import { appendRows } from "./appendRows.ts";
import { appendBatcher } from "./appendBatcher.ts";
import { AppendHooks, type AppendHook } from "./appendHooks.ts";
import { appendedEvents } from "./recordedRows.ts";
import type { NewEvent, RecordedEvent } from "./schema.ts";
import {
  LOG_HORIZON_SQL,
  type LogHorizon,
  READ_RANGE_EXCEPT_SQL,
  READ_RANGE_SQL,
  SCHEMA_EXISTS_QUERY,
  SCHEMA_SQL,
  SCHEMA_VERSION_QUERY,
  SQLSTATE_EVENT_ID_REUSED,
} from "./sql.ts";
import { type AppendOutcome, runAppend, appendStatement, type SendAppend } from "./appendSql.ts";
import { type LogVerification, type VerifyLogOptions, verifyEventLog } from "./verifyLog.ts";
import { readyForWriting, recordVerified, Sealer } from "./sealer.ts";
import type { AppendResult, EventStore, ExpectedVersion, SqlExecutor, SubscribeOptions, Unsubscribe } from "./store.ts";
import { LISTENER_APPLICATION_NAME, LogTail } from "./postgresLogTail.ts";
import { OWN_UNREAD_MAX, OwnPositions } from "./ownPositions.ts";
import { isConnectionError, pgExecutor, prepared } from "./postgresSql.ts";

export { LISTENER_APPLICATION_NAME } from "./postgresLogTail.ts";

export type PostgresStoreOptions = {
  /** A libpq connection URL, e.g. `postgres://user:pass@host:5432/db`. */
  url: string;
  /** The clock that stamps `recorded_at`; real time by default. */
  now?: () => Date;
  /** Connections in the pool (default 10); live subscriptions use one more. */
  poolSize?: number;
  /** Called when a subscriber's listener throws (that subscription then ends); logs by default. */
  onSubscriberError?: (error: unknown) => void;
  /** `existing`: open only a log that is there, as it is (no schema created or upgraded), e.g. to verify it; implies `readOnly`. */
  schema?: "create" | "existing";
  /** Opened to read: no check at open refuses it and nothing is sealed (see PgliteStoreOptions). */
  readOnly?: boolean;
};

const UNIQUE_VIOLATION = "23505";

/**
 * Batchers side by side over the pool: appends of one stream always go through the same one (in
 * order, one group in flight), appends of other streams overlap on other connections. Two, not four:
 * fewer lanes make larger groups (each a message, a transaction and a wake-up of a server process), and
 * four sent 40-50% more messages per delegation under load for more CPU on both sides (docs/scaling.md).
 */
const APPEND_LANES = 2;

/** A stream's lane (FNV-1a): two groups in flight at once never hold the same stream's lock. */
const laneOf = (streamId: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < streamId.length; i++) h = Math.imul(h ^ streamId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % APPEND_LANES;
};

/** The `pg` driver, loaded by the first PostgreSQL store: a process on PGlite never pays for it. */
let Pg: typeof pg | undefined;

/**
 * Opens the event log on a PostgreSQL server (15 or later), creating the schema when missing. Any
 * number of processes may open the same database: appends are guarded by the expected version,
 * and live subscribers are woken by LISTEN/NOTIFY.
 *
 * @example
 * const store = await openPostgresStore({ url: process.env.DATABASE_URL! });
 * store.subscribe(0, (event) => console.log(event.globalPosition, event.type));
 */
export const openPostgresStore = async (options: PostgresStoreOptions): Promise<EventStore> => {
  Pg ??= (await import("pg")).default;
  const config = { connectionString: options.url, max: options.poolSize ?? 10 };
  const pool = new Pg.Pool(config);
  // An idle client whose connection drops emits here; the next query gets a fresh one.
  pool.on("error", () => {});
  try {
    await ensureSchema(pool, options.schema ?? "create");
  } catch (e) {
    await pool.end().catch(() => {});
    if (e instanceof StoreError) throw e;
    const secrets = urlPasswords(options.url);
    throw new StoreError(
      "unavailable",
      `cannot open the PostgreSQL event log at ${redactSecrets(options.url, secrets)}: ${redactSecrets((e as Error).message, secrets)}`,
    );
  }
  const store = new PostgresStore(
    pool,
    config,
    options.now ?? (() => new Date()),
    options.onSubscriberError ?? defaultSubscriberError,
  );
  return readyForWriting(store, options);
};

const defaultSubscriberError = (error: unknown) =>
  console.error("actorzero: an event subscriber failed and was stopped:", error);

const ensureSchema = async (pool: pg.Pool, schema: "create" | "existing") => {
  const exists = (await pool.query<{ exists: boolean }>(SCHEMA_EXISTS_QUERY)).rows[0]?.exists === true;
  const version = exists
    ? ((await pool.query<{ version: number | null }>(SCHEMA_VERSION_QUERY)).rows[0]?.version ?? null)
    : null;
  // Without parameters pg sends the simple protocol: the whole script runs as one implicit transaction.
  if (schemaAction(version, schema, "") === "run-schema-sql") await pool.query(SCHEMA_SQL);
};

type Subscription = {
  cursor: number;
  listener: (event: RecordedEvent) => void | Promise<void>;
  active: boolean;
  running: boolean;
  pending: boolean;
  othersOnly: boolean;
};

class PostgresStore implements EventStore {
  readonly sql: SqlExecutor;
  #closed = false;
  #closing: Promise<void> | undefined;
  readonly #subscriptions = new Set<Subscription>();
  readonly #tail: LogTail;
  /** Absent while opened to read (or before open's check passed). */
  #sealer: Sealer | undefined;

  constructor(
    private readonly pool: pg.Pool,
    clientConfig: pg.ClientConfig,
    private readonly now: () => Date,
    private readonly onSubscriberError: (error: unknown) => void,
  ) {
    this.sql = pgExecutor(pool, () => this.#guard());
    this.#tail = new LogTail(
      () => new Pg!.Client({ ...clientConfig, application_name: LISTENER_APPLICATION_NAME }),
      (values) => this.#query<{ horizon: LogHorizon }>(LOG_HORIZON_SQL, values),
      () => this.#subscriptions.size > 0,
      () => this.#wakeSubscribers(),
      (processId) =>
        this.#ownBackends.has(processId) &&
        this.#othersOnly === this.#subscriptions.size &&
        this.#own.size < OWN_UNREAD_MAX,
    );
    // The backends of this store's pool: the commits they notify are this store's own appends.
    pool.on("connect", (client) => void this.#ownBackends.add((client as unknown as { processID: number }).processID));
    pool.on(
      "remove",
      (client) => void this.#ownBackends.delete((client as unknown as { processID: number }).processID),
    );
  }

  readonly #ownBackends = new Set<number>();

  /** Seals up to the settled horizon: an append that commits late, below a visible position, is never left out. */
  startSealing() {
    this.#sealer = new Sealer(this.#query, () => this.settledPosition());
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
      outcome = await this.#noteOwn(
        runAppend({ send: this.#sendAppend, query: this.#query }, streamId, expected, rows, recordedAt),
      );
      if (!outcome.conflict)
        recorded = await appendedEvents(this.#query, streamId, expected, rows, outcome, recordedAt);
    } catch (e) {
      if ((e as { code?: unknown }).code === UNIQUE_VIOLATION && !this.#closed) {
        // Lost the race for the same version every time: report it as the conflict it is.
        throw new ConcurrencyError(streamId, expected, await this.streamVersion(streamId));
      }
      throw this.#mapError(e);
    }
    if (outcome.conflict) throw new ConcurrencyError(streamId, expected, outcome.version);
    this.#hooks.appended(streamId, events);
    this.#sealer?.soon();
    return { nextExpectedVersion: outcome.version, positions: outcome.positions.map(Number), events: recorded };
  }

  /**
   * Group commit: the appends of this process's runs that wait while their lane's message is in flight
   * go together, one statement each, one transaction and one commit per group (see appendBatcher.ts).
   * A group that fails (a conflict, a deadlock with another process's group) is sent again one by one.
   */
  readonly #lanes = Array.from({ length: APPEND_LANES }, () =>
    appendBatcher(async (sql) => {
      // Without parameters pg sends the simple protocol: one result per statement, an array when several.
      const result = (await this.pool.query(sql)) as unknown as pg.QueryResult | pg.QueryResult[];
      return Array.isArray(result) ? result : [result];
    }),
  );

  readonly #sendAppend: SendAppend = (params) => this.#lanes[laneOf(params[0] as string)]!.run(appendStatement(params));

  readonly #hooks = new AppendHooks();

  onAppend(hook: AppendHook): Unsubscribe {
    return this.#hooks.add(hook);
  }

  readonly #query = async <R>(sql: string, params: unknown[]): Promise<R[]> =>
    (await this.pool.query<R & pg.QueryResultRow>(prepared(sql, params))).rows;

  readonly #reads = sqlReads((sql, params) => this.#rows(sql, params), COLUMN_ROWS);
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

  /** The highest position known to be final (every event at or below it is committed or never will be). */
  #settled = 0;

  /**
   * The settled horizon now (see actorzero_log_horizon): waits up to about two seconds for the appends in
   * flight to end, then falls back to the last horizon known final, so a transaction held open never
   * blocks a reader for long. Transaction ids are cluster-wide, so other databases' traffic can delay it.
   */
  async settledPosition(): Promise<number> {
    this.#guard();
    let candidate: { fence: string; handed: number } | null = null;
    for (let waitMs = 1; waitMs <= 1024; waitMs *= 2) {
      const rows: { horizon: LogHorizon }[] = await this.#rows(LOG_HORIZON_SQL, [candidate?.fence ?? null]);
      const h = rows[0]!.horizon;
      if (h.settled) return (this.#settled = Math.max(this.#settled, Number(h.handed)));
      if (candidate && h.candidate_settled) return (this.#settled = Math.max(this.#settled, candidate.handed));
      candidate ??= { fence: h.fence, handed: Number(h.handed) };
      await new Promise((r) => setTimeout(r, waitMs));
    }
    return Math.max(this.#settled, this.#tail.settled);
  }

  /**
   * Replays the stored events after `after`, then delivers each new one, whichever process appended
   * it. Reads only up to the log's settled horizon (see actorzero_log_horizon in sql.ts): a position
   * is delivered once every transaction that could still commit an event below it has ended, so an
   * event that commits out of order is delivered late, in its place, never skipped.
   */
  subscribe(
    after: number,
    listener: (event: RecordedEvent) => void | Promise<void>,
    options: SubscribeOptions = {},
  ): Unsubscribe {
    this.#guard();
    const othersOnly = options.othersOnly === true;
    const sub: Subscription = { cursor: after, listener, active: true, running: false, pending: false, othersOnly };
    this.#subscriptions.add(sub);
    if (othersOnly) this.#othersOnly++;
    this.#tail.start();
    this.#tail.refresh();
    this.#wake(sub);
    return () => {
      if (!sub.active) return;
      sub.active = false;
      this.#subscriptions.delete(sub);
      if (othersOnly && --this.#othersOnly === 0) this.#own.clear();
    };
  }

  /** Subscriptions that leave out this store's own appends, and the positions of those appends (see ownPositions.ts). */
  #othersOnly = 0;
  readonly #own = new OwnPositions();

  #noteOwn(sent: Promise<AppendOutcome>): Promise<AppendOutcome> {
    return this.#othersOnly === 0 ? sent : this.#own.note(sent);
  }

  /** Forgets own positions every othersOnly subscription has passed. */
  #pruneOwn() {
    let passed = Number.POSITIVE_INFINITY;
    for (const s of this.#subscriptions) if (s.othersOnly) passed = Math.min(passed, s.cursor);
    this.#own.forget(passed);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Seals nothing at close: waiting for other processes' appends to settle could hold it up to seconds;
      // the next seal of any process (or the next open) covers this one's tail.
      this.#sealer?.stop();
      this.#closed = true;
      for (const sub of this.#subscriptions) sub.active = false;
      this.#subscriptions.clear();
      await this.#tail.stop();
      await this.pool.end();
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

  /** Delivers one subscription's backlog up to the settled horizon, one listener call at a time. */
  async #pump(sub: Subscription) {
    sub.running = true;
    try {
      while (sub.pending && sub.active && !this.#closed) {
        sub.pending = false;
        for (;;) {
          const horizon = this.#tail.settled;
          if (horizon <= sub.cursor) break;
          if (sub.othersOnly) {
            await this.#own.known();
            // Own appends only (the whole log, when this process writes alone): nothing to read.
            if (this.#own.all(sub.cursor, horizon)) {
              sub.cursor = horizon;
              this.#pruneOwn();
              break;
            }
          }
          const own = sub.othersOnly ? this.#own.within(sub.cursor, horizon) : [];
          const rows =
            own.length > 0
              ? await this.#rows(READ_RANGE_EXCEPT_SQL, [sub.cursor, horizon, DEFAULT_PAGE, own])
              : await this.#rows(READ_RANGE_SQL, [sub.cursor, horizon, DEFAULT_PAGE]);
          for (const row of rows) {
            if (!sub.active || this.#closed) return;
            const event = decodeRow(row);
            await sub.listener(event);
            sub.cursor = event.globalPosition;
          }
          // Positions up to the horizon are final: the gaps below it (rolled back appends) stay gaps.
          if (rows.length < DEFAULT_PAGE) sub.cursor = Math.max(sub.cursor, horizon);
          if (sub.othersOnly) this.#pruneOwn();
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
      return await this.#query<R>(sql, params);
    } catch (e) {
      throw this.#mapError(e);
    }
  }

  #guard() {
    if (this.#closed) throw new StoreError("closed", "the event store is closed");
  }

  #mapError(e: unknown): unknown {
    if (this.#closed) return new StoreError("closed", "the event store was closed during the call", { cause: e });
    const code = (e as { code?: unknown }).code;
    if (code === SQLSTATE_EVENT_ID_REUSED) return new StoreError("refused", (e as Error).message, { cause: e });
    if (isConnectionError(code))
      return new StoreError(
        "unavailable",
        `the PostgreSQL server is unavailable: ${redactSecrets((e as Error).message)}`,
      );
    // The server ran out of disk (SQLSTATE 53100): nothing of the append committed; it goes through once space is freed.
    return diskFullError(e, "the PostgreSQL server's data") ?? e;
  }
}
