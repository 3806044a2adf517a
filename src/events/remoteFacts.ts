// The facts of a remote subordinate's run (runtime/remoteRun.ts), members of the event union in schema.ts: kept here so
// schema.ts stays one readable file.
import { z } from "zod";
import { RunId } from "./ids.ts";

/**
 * A remote subordinate's run (its context's kind is `remote`) sends its message as an A2A task to `url`: recorded with
 * the run's start, before anything is sent, with the A2A message id it is sent under (`messageId`, the run's id), so a
 * retry after a restart sends the same message id and an agent that deduplicates it starts no second task.
 */
export const RemoteTaskSent = z.object({
  type: z.literal("RemoteTaskSent"),
  data: z.object({
    runId: RunId,
    url: z.string(),
    skill: z.string().nullable(),
    messageId: z.string().min(1),
    /** The agent's A2A context the child's earlier task was in (a continued child continues it there), or null. */
    remoteContextId: z.string().nullable(),
  }),
});
/** The remote agent took the message: its task (and A2A context) id; from here the run only waits on that task. */
export const RemoteTaskAccepted = z.object({
  type: z.literal("RemoteTaskAccepted"),
  data: z.object({ runId: RunId, taskId: z.string().min(1), remoteContextId: z.string(), state: z.string() }),
});
