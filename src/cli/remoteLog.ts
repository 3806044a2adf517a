// The log as the holder of a PGlite data dir serves it over its control socket, for the read-only commands.
//
// Requirements:
// - The commands that read (contexts, tree, audit, events) run unchanged on it: the log's reads (LogReads), and the
//   projections' queries (ProjectionQueries) answered from the same folds the engine persists, done in memory.
//   Nothing else: no append, SQL, verification or rebuild to refuse.
// - What they see is the holder's log up to the moment it was read, in log order, positions as stored; `subscribe`
//   goes on live through the holder's event stream (events --follow).
import type { RecordedEvent } from "../events/schema.ts";
import type { LogReads } from "../events/store.ts";
import { ALL_PROJECTIONS } from "../projections/all.ts";
import type { ProjectionQueries } from "../projections/api.ts";
import { columnsOf } from "../projections/snapshot.ts";
import { foldEvents, type Projection } from "../projections/projection.ts";
import type { ContextApprovals } from "../projections/approvals.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { JobView } from "../projections/jobs.ts";
import { ROOT_GROUP, type TreeNode } from "../projections/tree.ts";
import type { UsageView } from "../projections/usage.ts";
import { historyOf } from "../projections/topics.ts";
import type { RunTranscript } from "../projections/transcript.ts";
import type { ChatMessage } from "../models/messages.ts";
import { holderRefused, type Holder } from "./holder.ts";

const PAGE = 10_000;

/** Every event the holder has stored after `after`. */
export const readAllFrom = async (holder: Holder, after = 0): Promise<RecordedEvent[]> => {
  const out: RecordedEvent[] = [];
  let cursor = after;
  for (;;) {
    const answer = await holder.call("GET", `/v1/events?after=${cursor}&limit=${PAGE}`);
    if (answer.status !== 200) throw holderRefused(answer);
    const page = answer.body.events as RecordedEvent[];
    out.push(...page);
    if (page.length < PAGE) return out;
    cursor = page.at(-1)!.globalPosition;
  }
};

export type RemoteLog = { store: LogReads & { close(): Promise<void> }; projections: ProjectionQueries };

export const remoteLog = async (holder: Holder): Promise<RemoteLog> => {
  const events = await readAllFrom(holder);
  const head = events.at(-1)?.globalPosition ?? 0;
  const streams = new Map<string, RecordedEvent[]>();
  for (const e of events) {
    if (!streams.has(e.streamId)) streams.set(e.streamId, []);
    streams.get(e.streamId)!.push(e);
  }
  const follows = new Set<{ close(): void }>();
  const store: RemoteLog["store"] = {
    readStream: async (id, fromVersion = 1) => (streams.get(id) ?? []).filter((e) => e.streamVersion >= fromVersion),
    streamVersion: async (id) => streams.get(id)?.at(-1)?.streamVersion ?? 0,
    readAll: async (after = 0, limit = 1000) => events.filter((e) => e.globalPosition > after).slice(0, limit),
    async *iterateAll(after = 0) {
      for (const e of events) if (e.globalPosition > after) yield e;
    },
    headPosition: async () => head,
    subscribe(after, listener) {
      for (const e of events) if (e.globalPosition > after) void listener(e);
      const live = holder.follow(Math.max(after, head), (e) => void listener(e));
      follows.add(live);
      return () => {
        live.close();
        follows.delete(live);
      };
    },
    close: async () => {
      for (const f of follows) f.close();
    },
  };
  return { store, projections: foldedProjections(events, head) };
};

type Row<S> = { key: string; group: string | null; order: number; state: S };

/** A projection's states as the engine would store them, in the engine's query order (order, then key). */
const rowsOf = <S>(projection: Projection<S>, events: readonly RecordedEvent[]): Row<S>[] =>
  [...foldEvents(projection, events).entries()]
    .map(([key, state]) => ({
      key,
      ...columnsOf(projection, key, state),
      state: JSON.parse(JSON.stringify(state)) as S,
    }))
    .sort((a, b) => a.order - b.order || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

const foldedProjections = (events: readonly RecordedEvent[], head: number): ProjectionQueries => {
  const byName = new Map(ALL_PROJECTIONS.map((p) => [p.name, rowsOf(p as Projection<unknown>, events)]));
  const rows = <S>(name: string) => (byName.get(name) ?? []) as Row<S>[];
  const one = <S>(name: string, key: string): S | null => rows<S>(name).find((r) => r.key === key)?.state ?? null;
  return {
    catchUp: async () => head,
    contexts: {
      get: async (id) => one<ContextView>("contexts", id),
      list: async (filter = {}) =>
        rows<ContextView>("contexts")
          .filter(
            (r) =>
              (filter.rootContextId === undefined || r.group === filter.rootContextId) &&
              (filter.status === undefined || r.state.status === filter.status),
          )
          .map((r) => r.state),
    },
    tree: {
      children: async (id) => one<TreeNode>("tree", id)?.children ?? [],
      roots: async () =>
        rows<TreeNode>("tree")
          .filter((r) => r.group === ROOT_GROUP)
          .map((r) => r.key),
    },
    transcript: {
      history: async (id, options) =>
        historyOf(
          rows<RunTranscript>("transcript")
            .filter((r) => r.group === id)
            .map((r) => r.state),
          options,
        ),
    },
    usage: {
      of: async (id) => one<UsageView>("usage", id),
      rollup: async (rootContextId) => {
        const mine = rows<UsageView>("usage").filter((r) => r.group === rootContextId);
        const sum = (f: (u: UsageView) => number) => mine.reduce((n, r) => n + f(r.state), 0);
        return {
          rootContextId,
          inputTokens: sum((u) => u.inputTokens),
          outputTokens: sum((u) => u.outputTokens),
          modelCalls: sum((u) => u.modelCalls),
          contexts: mine.length,
        };
      },
    },
    jobs: {
      get: async (jobId) => one<JobView>("jobs", jobId),
      ofContext: async (contextId) =>
        rows<JobView>("jobs")
          .filter((r) => r.group === contextId)
          .map((r) => r.state),
    },
    approvals: {
      of: async (ids) =>
        rows<ContextApprovals>("approvals")
          .filter((r) => r.state.approvals.length > 0 && (ids === undefined || ids.includes(r.key)))
          .map((r) => r.state),
      holding: async (approvalId) =>
        rows<ContextApprovals>("approvals").find((r) => r.state.approvals.some((a) => a.approvalId === approvalId))
          ?.state ?? null,
    },
  };
};
