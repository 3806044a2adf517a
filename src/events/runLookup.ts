// Finding a run in the log by the ids a protocol hands back: the run id (an A2A task id), or the id of the message
// that started it. Requirements:
// - The first match in log order wins (a message sent again under its id started nothing new).
// - One scan of the events table each (no index serves these keys): a caller that asks for the same run often
//   remembers the answer (the A2A handler's TaskIndex).
import type { SqlExecutor } from "./store.ts";

/** Where a run is: its context's stream and its id. */
export type RunLocation = { contextId: string; runId: string };

/** The run `runId` names: the context whose `RunStarted` recorded it, or null. */
export const runNamed = async (sql: SqlExecutor, runId: string): Promise<RunLocation | null> => {
  const { rows } = await sql.query<{ stream_id: string }>(
    "SELECT stream_id FROM events WHERE type = 'RunStarted' AND data->>'runId' = $1 ORDER BY global_position LIMIT 1",
    [runId],
  );
  return rows[0] ? { contextId: rows[0].stream_id, runId } : null;
};

/** The run a protocol's message (`via`, its `messageId` recorded as the causation) started or joined, or null. */
export const runStartedByMessage = async (
  sql: SqlExecutor,
  messageId: string,
  via: "mcp" | "a2a",
): Promise<RunLocation | null> => {
  const { rows } = await sql.query<{ stream_id: string; run_id: string }>(
    "SELECT stream_id, data->>'runId' AS run_id FROM events WHERE type = 'MessageReceived' AND data->>'via' = $2 AND metadata->>'causationId' = $1 ORDER BY global_position LIMIT 1",
    [messageId, via],
  );
  return rows[0] ? { contextId: rows[0].stream_id, runId: rows[0].run_id } : null;
};
