// The projections' public shape: what a reader asks (ProjectionQueries), what an engine offers besides (rebuild,
// verify, scratch builds), and the types they speak.
import type { Unsubscribe } from "../events/store.ts";
import type { ChatMessage } from "../models/messages.ts";
import type { ContextApprovals } from "./approvals.ts";
import type { ContextStatus, ContextView } from "./contexts.ts";
import type { JobView } from "./jobs.ts";
import type { TreeChild } from "./tree.ts";
import type { UsageRollup, UsageView } from "./usage.ts";

export type ProjectionsOptions = {
  /** Prefix of the two tables (`<prefix>projection_state`, `<prefix>projection_checkpoints`); `""` by default. */
  prefix?: string;
  /** Events read and applied per transaction. */
  pageSize?: number;
  /** Catch up once while opening (from the checkpoints, never from zero unless a version changed). Default true. */
  catchUp?: boolean;
};

/** One stored row of a projection. */
export type SnapshotRow = { key: string; group: string | null; order: number; position: number; state: unknown };
/** Every projection's rows, each list ordered by key (code-unit order), for comparing two builds. */
export type ProjectionsSnapshot = Record<string, SnapshotRow[]>;

export type Checkpoint = { name: string; version: number; position: number };

export type VerifyResult = {
  ok: boolean;
  /** The position both builds reached. */
  position: number;
  mismatches: { projection: string; key: string; stored: SnapshotRow | null; rebuilt: SnapshotRow | null }[];
};

/** What a reader asks of the projections: their queries, after catching up with the log. */
export interface ProjectionQueries {
  /** Applies the log after each checkpoint; concurrent calls are serialised and coalesced. Resolves to the position reached. */
  catchUp(): Promise<number>;

  contexts: {
    get(id: string): Promise<ContextView | null>;
    /** In creation order. */
    list(filter?: { rootContextId?: string; status?: ContextStatus }): Promise<ContextView[]>;
  };
  tree: {
    /** The children of a context, in creation order. */
    children(id: string): Promise<TreeChild[]>;
    /** Root context ids, in creation order. */
    roots(): Promise<string[]>;
  };
  transcript: {
    /**
     * The context's messages as the model is sent them: its runs (topics) in order, compacted ones as their
     * summary; with `full`, every original message.
     */
    history(id: string, options?: { full?: boolean }): Promise<ChatMessage[]>;
  };
  usage: {
    of(id: string): Promise<UsageView | null>;
    /** Sums over every context of the root's tree, each context once. */
    rollup(rootContextId: string): Promise<UsageRollup>;
  };
  jobs: {
    get(jobId: string): Promise<JobView | null>;
    /** The jobs started by a context, in order. */
    ofContext(contextId: string): Promise<JobView[]>;
  };
  approvals: {
    /** The approval states of these contexts (of every context when omitted) that ever asked for one. */
    of(contextIds?: readonly string[]): Promise<ContextApprovals[]>;
    /** The state of the context holding approval `approvalId`, or null when none does. */
    holding(approvalId: string): Promise<ContextApprovals | null>;
  };
}

/** The engine: the queries, and the upkeep of the stored states (rebuild, verify, scratch builds). */
export interface Projections extends ProjectionQueries {
  /** Forgets every state and checkpoint, then replays the log from zero. */
  rebuild(): Promise<number>;
  checkpoints(): Promise<Checkpoint[]>;
  /** Catches up after every event committed from now on (through `store.subscribe`). */
  follow(onError?: (error: unknown) => void): Unsubscribe;

  snapshot(): Promise<ProjectionsSnapshot>;
  /**
   * Rebuilds every projection from zero into scratch tables named with `prefix` and returns their
   * snapshot; the stored tables are untouched. The scratch tables are dropped unless `keep`.
   */
  rebuildInto(prefix: string, options?: { keep?: boolean; until?: number }): Promise<ProjectionsSnapshot>;
  /**
   * Catches up, parses every event up to that position in full (reads trust the rows; this does not:
   * EventDecodeError names the first that fails), rebuilds from zero into scratch tables up to the
   * same position, and compares.
   */
  verify(): Promise<VerifyResult>;
  /** Drops this engine's tables (for scratch builds and tests). */
  drop(): Promise<void>;
}
