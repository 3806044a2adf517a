// The event store port: one append-only log, read by stream, in pages, or live (DESIGN §3).
import type { AppendHook } from "./appendHooks.ts";
import type { NewEvent, RecordedEvent } from "./schema.ts";
import type { LogVerification, VerifyLogOptions } from "./verifyLog.ts";

/** `no_stream`: the stream must not exist yet; `any`: no check; a number: the stream's current version. */
export type ExpectedVersion = number | "no_stream" | "any";

export type AppendResult = {
  /** The stream's version after the append: the expected version for the next one. */
  nextExpectedVersion: number;
  /** Global positions of the appended events, in order (the original ones for an idempotent re-append). */
  positions: number[];
  /**
   * The events as the log holds them, in order: encoded data, schema version, the recorded time the
   * store wrote, positions and stream versions (the rows stored the first time for a re-append).
   */
  events: RecordedEvent[];
};

export type Unsubscribe = () => void;

export type SubscribeOptions = {
  /**
   * Leave out events this store appended itself (a store shared by processes reads only what the others
   * wrote; a reader that applied its own appends as they returned need not read them again). A store no
   * other process writes to may deliver them anyway: leaving them out is a saving, never a promise.
   */
  othersOnly?: boolean;
};

/** A raw SQL door for projections and tests, in the same database as the log. */
export interface SqlExecutor {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
  exec(sql: string): Promise<void>;
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

/** What a reader of the log uses: its streams, its pages, its positions, and live delivery. */
export interface LogReads {
  /** The stream's events from `fromVersion` (inclusive, default 1), in order. */
  readStream(streamId: string, fromVersion?: number): Promise<RecordedEvent[]>;
  /** The stream's current version, 0 when it does not exist. */
  streamVersion(streamId: string): Promise<number>;
  /** One page of the whole log: events with position > `after` (default 0), at most `limit` of them. */
  readAll(after?: number, limit?: number): Promise<RecordedEvent[]>;
  /** The whole log after `after`, read page by page, never all in memory. */
  iterateAll(after?: number, pageSize?: number): AsyncIterable<RecordedEvent>;
  /** The highest position committed so far (0 for an empty log). */
  headPosition(): Promise<number>;
  /**
   * The highest position at or below which no event can still appear. With several writer processes an
   * append may commit below a position already visible, so a reader that pages on and keeps a checkpoint
   * (projections) reads only this far. Absent when one process writes: every committed position is final.
   * Its presence is the store's one capability the runtime asks about (`sharedByProcesses`).
   */
  settledPosition?(): Promise<number>;
  /**
   * Calls `listener` for every event after `after`, in position order, first the stored ones, then
   * each new one as it commits; never skips one that committed out of order.
   */
  subscribe(
    after: number,
    listener: (event: RecordedEvent) => void | Promise<void>,
    options?: SubscribeOptions,
  ): Unsubscribe;
}

/** The log: its reads, and appends (append, reads, subscribe, positions). */
export interface EventLog extends LogReads {
  /**
   * Appends `events` to `streamId` in one transaction and one round trip.
   * Throws ConcurrencyError when the stream is not at `expectedVersion`; re-appending events whose
   * ids are already stored returns their original positions and rows and writes nothing.
   */
  append(
    streamId: string,
    events: readonly NewEvent[],
    options: { expectedVersion: ExpectedVersion },
  ): Promise<AppendResult>;
  /**
   * Calls `hook` around every append made through this store object (appendHooks.ts): `stamp` before it is
   * stored, `appended` once it committed. A runtime observes the facts it writes this way.
   */
  onAppend(hook: AppendHook): Unsubscribe;
}

/** The database the log lives in, for its upkeep rather than its use: raw SQL and the whole-log check. */
export interface LogDatabase {
  /**
   * Checks the whole log against itself (verifyLog.ts): the hash chain, stream versions contiguous
   * from 1, every row decodable, the append-only guard in place; with `since`, that the log only grew
   * after that anchor. Writes nothing. StoreError `refused` when the database holds no actorzero log.
   */
  verify(options?: VerifyLogOptions): Promise<LogVerification>;
  /** SQL in the same database, for projections and leases. */
  readonly sql: SqlExecutor;
}

/** An opened store: the log and its database, until `close`. */
export interface EventStore extends EventLog, LogDatabase {
  close(): Promise<void>;
}

/**
 * Whether other processes may append to this log (PostgreSQL; a PGlite data dir belongs to one process): runs are
 * then driven under leases, a run another process drives is asked through the log, and what others append is
 * followed. Only such a store has a `settledPosition`, so the capability is read from it rather than from a name.
 */
export const sharedByProcesses = (store: Pick<EventStore, "settledPosition">): boolean =>
  store.settledPosition !== undefined;
