// Reads what an audit needs from the log: the streams of a context and of everything below it.
import type { EventStore } from "../events/store.ts";
import type { RecordedEvent } from "../events/schema.ts";
import type { Projections } from "../projections/engine.ts";
import { buildAudit, type AuditReport } from "../projections/auditReport.ts";
import { subtreeIds } from "./context.ts";

export const loadAudit = async (store: EventStore, projections: Projections, rootId: string): Promise<AuditReport> => {
  await projections.catchUp();
  const streams = new Map<string, RecordedEvent[]>();
  for (const id of await subtreeIds(projections, rootId)) streams.set(id, await store.readStream(id));
  return buildAudit(rootId, streams);
};
