// Persists the projections in the log's own database, checkpointed by global position: a catch-up folds
// page by page in memory and writes the changed states with the checkpoints in one statement.
import { firstInvalid } from "../events/codec.ts";
import { refuseShorterLog } from "./logLength.ts";
import type { RecordedEvent } from "../events/schema.ts";
import type { EventStore, SqlExecutor, Unsubscribe } from "../events/store.ts";
import { ALL_PROJECTIONS } from "./all.ts";
import { isFolded, type Projection } from "./projection.ts";
import { columnsOf } from "./snapshot.ts";
import { mismatchesOf, parseEveryRow, readSnapshot } from "./storedCheck.ts";
import { projectionQueries } from "./queries.ts";
import { createStateTables, lockForReset, readCheckpoints, resetRows } from "./stateTables.ts";
import type { Checkpoint, Projections, ProjectionsOptions, ProjectionsSnapshot, VerifyResult } from "./api.ts";

export type {
  Checkpoint,
  ProjectionQueries,
  Projections,
  ProjectionsOptions,
  ProjectionsSnapshot,
  SnapshotRow,
  VerifyResult,
} from "./api.ts";
export { foldSnapshot } from "./snapshot.ts";

const DEFAULT_PAGE = 1000;
/** States kept between pages of one catch-up; beyond this the cache is dropped and states are loaded again. */
const CACHE_LIMIT = 50_000;
/** Changed states kept in memory before they are written (with the checkpoints) mid catch-up. */
const FLUSH_LIMIT = 20_000;

/**
 * Opens the projections over `store`, creating their tables in the same database. A projection whose
 * stored version differs from its code's is rebuilt from zero; the others continue from their checkpoint.
 *
 * @example
 * const projections = await openProjections(store);
 * await projections.catchUp();
 * const view = await projections.contexts.get(contextId);
 */
export const openProjections = async (
  store: EventStore,
  projections: readonly Projection<any>[] = ALL_PROJECTIONS,
  options: ProjectionsOptions = {},
): Promise<Projections> => {
  const prefix = options.prefix ?? "";
  if (!/^[a-z_][a-z0-9_]*$|^$/.test(prefix))
    throw new Error(`projection table prefix '${prefix}' must be lower-case letters, digits and _`);
  const names = new Set<string>();
  for (const p of projections) {
    if (names.has(p.name)) throw new Error(`two projections are named '${p.name}'`);
    names.add(p.name);
  }
  const engine = new ProjectionEngine(store, projections, prefix, options.pageSize ?? DEFAULT_PAGE);
  await engine.open();
  if (options.catchUp !== false) await engine.catchUp();
  return engine;
};

type Live = {
  projection: Projection<any>;
  /** The last position applied, as this engine knows it. */
  position: number;
  /** States folded during the current catch-up, so the next page need not load them again. */
  cache: Map<string, unknown>;
  /** Keys of `cache` changed since the last flush. */
  dirty: Set<string>;
  /** The last position folded into `cache`; `position` catches up with it when the states are written. */
  pending: number;
  /** True while every stored state of this projection is in `cache` (a rebuild from zero): nothing to load. */
  complete: boolean;
};

class ProjectionEngine implements Projections {
  readonly #state: string;
  readonly #checkpoints: string;
  readonly #live: Live[];
  #running: Promise<number> | null = null;
  #queued: Promise<number> | null = null;

  constructor(
    readonly store: EventStore,
    readonly projections: readonly Projection<any>[],
    readonly prefix: string,
    readonly pageSize: number,
  ) {
    this.#state = `${prefix}projection_state`;
    this.#checkpoints = `${prefix}projection_checkpoints`;
    ({
      contexts: this.contexts,
      tree: this.tree,
      transcript: this.transcript,
      usage: this.usage,
      jobs: this.jobs,
      approvals: this.approvals,
    } = projectionQueries(() => this.#sql, this.#state));
    this.#live = projections.map((projection) => ({
      projection,
      position: 0,
      cache: new Map(),
      dirty: new Set(),
      pending: 0,
      complete: false,
    }));
  }

  get #sql(): SqlExecutor {
    return this.store.sql;
  }

  async open(): Promise<void> {
    await createStateTables(this.#sql, this.#state, this.#checkpoints);
    await refuseShorterLog(this.store, this.#checkpoints);
    // Which projections are stale is read under the reset's lock: a process that opens a moment after
    // another one reset them finds them current and keeps what that one has written since.
    const stale = await this.#sql.transaction(async (tx) => {
      await lockForReset(tx);
      const stored = new Map((await readCheckpoints(tx, this.#checkpoints)).map((c) => [c.name, c]));
      const stale = this.#live.filter((l) => stored.get(l.projection.name)?.version !== l.projection.version);
      if (stale.length > 0)
        await resetRows(
          tx,
          this.#state,
          this.#checkpoints,
          stale.map((l) => l.projection),
        );
      for (const l of this.#live)
        if (!stale.includes(l)) ((l.position = stored.get(l.projection.name)!.position), (l.pending = l.position));
      return stale;
    });
    this.#resetMemory(stale);
  }

  checkpoints(): Promise<Checkpoint[]> {
    return readCheckpoints(this.#sql, this.#checkpoints);
  }

  /** Empties the states of `live` and sets their checkpoints to zero at the code's version. */
  async #reset(live: Live[]): Promise<void> {
    await this.#sql.transaction(async (tx) => {
      await lockForReset(tx);
      await resetRows(
        tx,
        this.#state,
        this.#checkpoints,
        live.map((l) => l.projection),
      );
    });
    this.#resetMemory(live);
  }

  #resetMemory(live: Live[]): void {
    for (const l of live) {
      l.position = 0;
      this.#forget(l);
      l.complete = true;
    }
  }

  catchUp(): Promise<number> {
    return this.#serial(() => this.#advance(Number.POSITIVE_INFINITY));
  }

  rebuild(): Promise<number> {
    return this.#exclusive(async () => {
      await this.#reset(this.#live);
      return this.#advance(Number.POSITIVE_INFINITY);
    });
  }

  async #rebuildUntil(until: number): Promise<number> {
    return this.#exclusive(async () => {
      await this.#reset(this.#live);
      return this.#advance(until);
    });
  }

  /** A catch-up asked for while one runs is done once after it, for every caller who asked meanwhile. */
  #serial(run: () => Promise<number>): Promise<number> {
    if (this.#queued) return this.#queued;
    if (!this.#running) return this.#exclusive(run);
    const queued = this.#running
      .catch(() => 0)
      .then(() => {
        if (this.#queued === queued) this.#queued = null;
        return this.#exclusive(run);
      });
    this.#queued = queued;
    return queued;
  }

  /** Runs `work` after whatever runs now, never two at once. */
  #exclusive(work: () => Promise<number>): Promise<number> {
    const previous = this.#running ?? Promise.resolve(0);
    const next: Promise<number> = previous.catch(() => 0).then(work);
    this.#running = next;
    const clear = () => {
      if (this.#running === next) this.#running = null;
    };
    next.then(clear, clear);
    return next;
  }

  /**
   * Folds the log after the checkpoints in memory, page by page, and writes the touched states and
   * the checkpoints in one statement at the end (or whenever FLUSH_LIMIT states are waiting), not
   * once per page: a rebuild then writes each state once instead of once per page that touched it.
   */
  async #advance(requested: number): Promise<number> {
    // Never past a position an append still in flight could commit below: the checkpoint would skip it.
    const settled = this.store.settledPosition ? await this.store.settledPosition() : Number.POSITIVE_INFINITY;
    const until = Math.min(requested, settled);
    try {
      for (;;) {
        let after = Math.min(...this.#live.map((l) => l.position));
        let flushed = true;
        for (;;) {
          if (after >= until) break;
          const limit = Number.isFinite(until) ? Math.min(this.pageSize, until - after) : this.pageSize;
          const page = (await this.store.readAll(after, limit)).filter((e) => e.globalPosition <= until);
          if (page.length === 0) break;
          await this.#foldPage(page);
          after = page[page.length - 1]!.globalPosition;
          if (this.#dirtyCount() >= FLUSH_LIMIT && !(flushed = await this.#flush())) break;
        }
        if (flushed && (await this.#flush())) return Math.max(after, Math.min(...this.#live.map((l) => l.position)));
        // Another process moved a checkpoint meanwhile: what was folded is dropped; go on from its checkpoints.
      }
    } finally {
      // The cache only spans one catch-up: another process may write the same rows between calls.
      for (const l of this.#live) this.#forget(l);
    }
  }

  #dirtyCount = (): number => this.#live.reduce((n, l) => n + l.dirty.size, 0);

  /** Drops what this engine folded but did not write. */
  #forget(l: Live) {
    l.cache = new Map();
    l.dirty = new Set();
    l.complete = false;
    l.pending = l.position;
  }

  /** Applies a page to the cached states (loading the ones not cached), remembering which changed. */
  async #foldPage(page: RecordedEvent[]): Promise<void> {
    const first = page[0]!.globalPosition;
    const last = page[page.length - 1]!.globalPosition;
    // Control streams are left out before the folds (projection.ts: isFolded); the checkpoints still pass them.
    const folded = page.filter(isFolded);
    const work: { live: Live; events: RecordedEvent[] }[] = [];
    for (const l of this.#live) {
      if (l.pending >= last) continue;
      work.push({ live: l, events: l.pending < first ? folded : folded.filter((e) => e.globalPosition > l.pending) });
    }
    // States not cached are loaded first; a rebuild from zero (`complete`) has every state cached already.
    const toLoad: { n: string; k: string }[] = [];
    for (const { live, events } of work) {
      if (live.complete) continue;
      const keys = new Set(events.flatMap((e) => live.projection.keysOf(e)).filter((k) => !live.cache.has(k)));
      for (const k of keys) toLoad.push({ n: live.projection.name, k });
    }
    if (toLoad.length > 0) {
      // Before the flush: a state another process writes meanwhile moves its checkpoint too, which the flush finds.
      const { rows: found } = await this.#sql.query<{ projection: string; key: string; state: unknown }>(
        `SELECT s.projection, s.key, s.state FROM ${this.#state} s
         JOIN jsonb_to_recordset($1::jsonb) AS x(n text, k text) ON s.projection = x.n AND s.key = x.k`,
        [JSON.stringify(toLoad)],
      );
      const byName = new Map(work.map((w) => [w.live.projection.name, w.live]));
      for (const r of found) byName.get(r.projection)?.cache.set(r.key, r.state);
    }
    // One pass per projection: each event's keys are asked once, and every state they name is in the cache or new.
    for (const { live, events } of work) {
      const { projection: p, cache, dirty } = live;
      try {
        for (const e of events) {
          for (const k of p.keysOf(e)) {
            cache.set(k, p.evolve(cache.get(k) ?? p.init(k), e));
            dirty.add(k);
          }
        }
      } catch (e) {
        // Folds never throw on valid events; a row written around the store may not be one.
        throw firstInvalid(events) ?? e;
      }
      live.pending = last;
    }
  }

  /**
   * Writes the changed states and moves the checkpoints in one statement that first locks the
   * checkpoints; false (nothing written, everything folded dropped) when another process moved one
   * since this engine read it.
   */
  async #flush(): Promise<boolean> {
    const moving = this.#live.filter((l) => l.pending > l.position);
    if (moving.length === 0) return true;
    const upserts: { n: string; k: string; g: string | null; o: number; p: number; s: unknown }[] = [];
    for (const l of moving) {
      for (const k of l.dirty) {
        const s = l.cache.get(k);
        const c = columnsOf(l.projection, k, s);
        upserts.push({
          n: l.projection.name,
          k,
          g: c.group,
          o: c.order,
          p: (s as { position?: number }).position ?? l.pending,
          s,
        });
      }
    }
    const want = moving.map((l) => ({ n: l.projection.name, p0: l.position, p: l.pending }));
    // One statement, so one round trip and atomic without a transaction: lock the checkpoints; only
    // when each is where this engine left it, write the states and move the checkpoints.
    const { rows } = await this.#sql.query<{
      ok: boolean;
      stored: { name: string; position: number | string }[] | null;
    }>(
      `WITH want AS (SELECT n, p0, p FROM jsonb_to_recordset($2::jsonb) AS w(n text, p0 bigint, p bigint)),
       cp AS (SELECT c.name, c.position FROM ${this.#checkpoints} c WHERE c.name IN (SELECT n FROM want) FOR UPDATE),
       ok AS (SELECT bool_and(cp.position IS NOT DISTINCT FROM want.p0) AS ok FROM want LEFT JOIN cp ON cp.name = want.n),
       ins AS (
         INSERT INTO ${this.#state} (projection, key, grp, ord, position, state)
         SELECT n, k, g, o, p, s FROM jsonb_to_recordset($1::jsonb) AS x(n text, k text, g text, o bigint, p bigint, s jsonb)
         WHERE (SELECT ok FROM ok)
         ON CONFLICT (projection, key) DO UPDATE
           SET grp = EXCLUDED.grp, ord = EXCLUDED.ord, position = EXCLUDED.position, state = EXCLUDED.state
         RETURNING 1),
       upd AS (UPDATE ${this.#checkpoints} c SET position = want.p FROM want WHERE c.name = want.n AND (SELECT ok FROM ok) RETURNING 1)
       SELECT (SELECT ok FROM ok) AS ok, (SELECT json_agg(json_build_object('name', name, 'position', position)) FROM cp) AS stored,
              (SELECT count(*) FROM ins) + (SELECT count(*) FROM upd) AS written`,
      [JSON.stringify(upserts), JSON.stringify(want)],
    );
    if (rows[0]?.ok !== true) {
      // Another process moved a checkpoint since this engine read it: drop what was folded, go on from there.
      const stored = new Map((rows[0]?.stored ?? []).map((r) => [r.name, Number(r.position)]));
      for (const l of moving) l.position = stored.get(l.projection.name) ?? 0;
      for (const l of this.#live) this.#forget(l);
      return false;
    }
    for (const l of moving) {
      l.position = l.pending;
      l.dirty = new Set();
      if (l.cache.size > CACHE_LIMIT) {
        l.cache = new Map();
        l.complete = false;
      }
    }
    return true;
  }

  follow(
    onError: (error: unknown) => void = (e) => console.error("actorzero: projections failed to catch up:", e),
  ): Unsubscribe {
    const after = Math.min(...this.#live.map((l) => l.position));
    return this.store.subscribe(after, () => void this.catchUp().catch(onError));
  }

  // The queries (src/projections/queries.ts).
  readonly contexts: Projections["contexts"];
  readonly tree: Projections["tree"];
  readonly transcript: Projections["transcript"];
  readonly usage: Projections["usage"];
  readonly jobs: Projections["jobs"];
  readonly approvals: Projections["approvals"];

  snapshot(): Promise<ProjectionsSnapshot> {
    return readSnapshot(this.#sql, this.#state, this.projections);
  }

  async rebuildInto(prefix: string, options: { keep?: boolean; until?: number } = {}): Promise<ProjectionsSnapshot> {
    if (prefix === this.prefix) throw new Error("rebuildInto needs a prefix other than the stored tables'");
    const scratch = new ProjectionEngine(this.store, this.projections, prefix, this.pageSize);
    await scratch.open();
    try {
      await scratch.#rebuildUntil(options.until ?? Number.POSITIVE_INFINITY);
      return await scratch.snapshot();
    } finally {
      if (!options.keep) await scratch.drop();
    }
  }

  async verify(): Promise<VerifyResult> {
    const position = await this.catchUp();
    await parseEveryRow(this.#sql, position, this.pageSize);
    const stored = await this.snapshot();
    const rebuilt = await this.rebuildInto(`${this.prefix}verify_`, { until: position });
    const mismatches = mismatchesOf(this.projections, stored, rebuilt);
    return { ok: mismatches.length === 0, position, mismatches };
  }

  async drop(): Promise<void> {
    await this.#sql.exec(`DROP TABLE IF EXISTS ${this.#state}; DROP TABLE IF EXISTS ${this.#checkpoints};`);
  }
}
