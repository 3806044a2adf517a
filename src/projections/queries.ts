// The projections' read side: the queries over the stored states, one statement each.
import type { SqlExecutor } from "../events/store.ts";
import type { ChatMessage } from "../models/messages.ts";
import { historyOf } from "./topics.ts";
import type { RunTranscript } from "./transcript.ts";
import type { ContextApprovals } from "./approvals.ts";
import type { ContextStatus, ContextView } from "./contexts.ts";
import type { JobView } from "./jobs.ts";
import { ROOT_GROUP, type TreeChild, type TreeNode } from "./tree.ts";
import type { UsageRollup, UsageView } from "./usage.ts";

/** The queries over `table` (an engine's `projection_state`), through the executor `sql()` returns. */
export const projectionQueries = (sql: () => SqlExecutor, table: string) => {
  const one = async <S>(projection: string, key: string): Promise<S | null> => {
    const { rows } = await sql().query<{ state: S }>(`SELECT state FROM ${table} WHERE projection = $1 AND key = $2`, [
      projection,
      key,
    ]);
    return rows[0]?.state ?? null;
  };

  const group = async <S>(projection: string, grp: string, extra = "", params: unknown[] = []): Promise<S[]> => {
    const { rows } = await sql().query<{ state: S }>(
      `SELECT state FROM ${table} WHERE projection = $1 AND grp = $2 ${extra} ORDER BY ord, key`,
      [projection, grp, ...params],
    );
    return rows.map((r) => r.state);
  };

  const contexts = {
    get: (id: string) => one<ContextView>("contexts", id),
    list: async (filter: { rootContextId?: string; status?: ContextStatus } = {}): Promise<ContextView[]> => {
      const where = ["projection = 'contexts'"];
      const params: unknown[] = [];
      if (filter.rootContextId !== undefined) where.push(`grp = $${params.push(filter.rootContextId)}`);
      if (filter.status !== undefined) where.push(`state->>'status' = $${params.push(filter.status)}`);
      const { rows } = await sql().query<{ state: ContextView }>(
        `SELECT state FROM ${table} WHERE ${where.join(" AND ")} ORDER BY ord, key`,
        params,
      );
      return rows.map((r) => r.state);
    },
  };

  const tree = {
    children: async (id: string): Promise<TreeChild[]> => (await one<TreeNode>("tree", id))?.children ?? [],
    roots: async (): Promise<string[]> => {
      const { rows } = await sql().query<{ key: string }>(
        `SELECT key FROM ${table} WHERE projection = 'tree' AND grp = $1 ORDER BY ord, key`,
        [ROOT_GROUP],
      );
      return rows.map((r) => r.key);
    },
  };

  const transcript = {
    history: async (id: string, options: { full?: boolean } = {}): Promise<ChatMessage[]> => {
      const { rows } = await sql().query<{ state: RunTranscript }>(
        `SELECT state FROM ${table} WHERE projection = 'transcript' AND grp = $1 ORDER BY ord, key`,
        [id],
      );
      return historyOf(
        rows.map((r) => r.state),
        options,
      );
    },
  };

  const usage = {
    of: (id: string) => one<UsageView>("usage", id),
    rollup: async (rootContextId: string): Promise<UsageRollup> => {
      const { rows } = await sql().query<{ i: unknown; o: unknown; m: unknown; c: unknown }>(
        `SELECT coalesce(sum((state->>'inputTokens')::bigint), 0)::float8 AS i,
                coalesce(sum((state->>'outputTokens')::bigint), 0)::float8 AS o,
                coalesce(sum((state->>'modelCalls')::bigint), 0)::float8 AS m,
                count(*)::float8 AS c
         FROM ${table} WHERE projection = 'usage' AND grp = $1`,
        [rootContextId],
      );
      const r = rows[0];
      return {
        rootContextId,
        inputTokens: Number(r?.i ?? 0),
        outputTokens: Number(r?.o ?? 0),
        modelCalls: Number(r?.m ?? 0),
        contexts: Number(r?.c ?? 0),
      };
    },
  };

  const jobs = {
    get: (jobId: string) => one<JobView>("jobs", jobId),
    ofContext: (contextId: string) => group<JobView>("jobs", contextId),
  };

  const approvals = {
    of: async (contextIds?: readonly string[]): Promise<ContextApprovals[]> => {
      const { rows } = await sql().query<{ state: ContextApprovals }>(
        `SELECT state FROM ${table} WHERE projection = 'approvals' AND jsonb_array_length(state->'approvals') > 0
         ${contextIds === undefined ? "" : "AND grp = ANY($1::text[])"} ORDER BY ord, key`,
        contextIds === undefined ? [] : [[...contextIds]],
      );
      return rows.map((r) => r.state);
    },
    /** The state of the context that holds approval `approvalId` (JSONB containment, so no full scan of states). */
    holding: async (approvalId: string): Promise<ContextApprovals | null> => {
      const { rows } = await sql().query<{ state: ContextApprovals }>(
        `SELECT state FROM ${table} WHERE projection = 'approvals' AND state->'approvals' @> $1::jsonb LIMIT 1`,
        [JSON.stringify([{ approvalId }])],
      );
      return rows[0]?.state ?? null;
    },
  };

  return { contexts, tree, transcript, usage, jobs, approvals };
};
