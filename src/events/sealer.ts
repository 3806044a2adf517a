// Seals the log behind the appends, and checks at open what the log added since it was last found intact.
//
// Requirements:
// - Never on an append's path: an append only asks for a seal later (`soon`); one timer per store
//   gathers every append of that interval into one seal (a seal costs one statement whatever it covers).
// - Seals only the settled horizon (the store's: every position at or below it is final), so an append
//   that commits late, below a visible position, is never left out of a seal.
// - Any number of processes may run one; the database lets one seal at a time and the others skip.
// - A seal that fails (a closed store, a lost connection) is tried again at the next one; `flush`, at
//   close, seals what has settled and reports nothing.
// - The check at open (`checkAtOpen`): the last seal found intact is unchanged, the seals after it
//   recompute, and every event after it links to its stream's previous one with versions running on;
//   anything else refuses opening for writing with StoreError `tampered` naming the first bad position.
import { StoreError } from "./errors.ts";
import { RECORD_VERIFIED_SQL, SEAL_SQL, type SealOutcome, VERIFIED_SQL } from "./sealSql.ts";
import type { SqlExecutor } from "./store.ts";
import { verifyEventLog } from "./verifyLog.ts";

/** How long after an append the seal over it is made. */
export const SEAL_DELAY_MS = 500;

export class Sealer {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    private readonly query: <R>(sql: string, params: unknown[]) => Promise<R[]>,
    private readonly settled: () => Promise<number>,
    private readonly delayMs = SEAL_DELAY_MS,
  ) {}

  /** Asks for a seal within delayMs; cheap enough for every append. */
  soon() {
    if (this.#timer !== undefined || this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.seal().catch(() => {});
    }, this.delayMs);
    this.#timer.unref();
  }

  /** Seals every settled event not sealed yet (one seal at a time in this process). */
  seal(): Promise<void> {
    const run = this.#running.then(async () => {
      const upTo = await this.settled();
      for (let i = 0; i < 1000; i++) {
        const [row] = await this.query<{ seal: SealOutcome }>(SEAL_SQL, [upTo]);
        if (!row?.seal?.more) return;
      }
    });
    this.#running = run.catch(() => {});
    return run;
  }

  /** No more timers. */
  stop() {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** At close: no more timers; seals what has settled, quietly. */
  async flush(): Promise<void> {
    this.stop();
    await this.seal().catch(() => {});
  }
}

/** Checks what the log added since the last seal found intact (see the header), then records the last seal. */
export const checkAtOpen = async (sql: SqlExecutor): Promise<void> => {
  const verified = (await sql.query<{ up_to: string | number; hash: string }>(VERIFIED_SQL)).rows[0];
  const from = verified ? { position: Number(verified.up_to), hash: verified.hash } : undefined;
  const result = await verifyEventLog(sql, from ? { from } : {});
  const bad = result.problems.find((p) => p.position !== null);
  if (bad) {
    throw new StoreError(
      "tampered",
      `the event log was changed at position ${bad.position}: ${bad.problem}; it is not opened for writing (actorzero verify-log lists every problem)`,
    );
  }
  await recordVerified(sql, result.head);
};

/** Records a seal found intact, so the next open starts its check there. */
export const recordVerified = async (
  sql: SqlExecutor,
  head: { position: number; hash: string | null },
): Promise<void> => {
  if (head.hash !== null && head.position > 0) await sql.query(RECORD_VERIFIED_SQL, [head.position, head.hash]);
};

/**
 * The last step of opening a store, the same for every adapter: a store opened for writing checks what the log
 * gained since its last checked seal (closed again when that refuses) and then starts sealing; a read-only one
 * (or one over an existing schema it must not change) is returned as it is.
 */
export const readyForWriting = async <S extends { sql: SqlExecutor; close(): Promise<void>; startSealing(): void }>(
  store: S,
  options: { readOnly?: boolean; schema?: "create" | "existing" },
): Promise<S> => {
  if (options.readOnly || options.schema === "existing") return store;
  try {
    await checkAtOpen(store.sql);
  } catch (e) {
    await store.close();
    throw e;
  }
  store.startSealing();
  return store;
};
