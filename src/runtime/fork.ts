// rt.fork: a new root whose history is a context's own up to one of its events, to run again from there.
//
// Requirements:
// - The source is untouched: its events are copied (fresh event ids) into the fork's own stream.
// - The fork is a root (depth 0, no parent) whatever the source was: forking a subordinate forks only it;
//   its ContextCreated records where it came from (`forkedFrom`: the source context and the position).
// - The ids the context owns (job and approval ids) are renamed in the copy, the same id alike wherever it
//   appears: the jobs and approvals projections find them by id across contexts, and the source keeps its
//   own, so a decision on the source's approval cannot land on the fork's. An approval id stays a UUID.
// - The fork is a root, so its copied runs have no superior (`superior: null`): a run of the fork never names a
//   run of another tree (the source's caller), and the link to the source is `forkedFrom`.
// - A copied approval request names the fork as its context, so the fork's approvals are its own.
// - A run the cut leaves open is recorded as interrupted in the fork, so the fork takes a new message; a cut
//   between a message and its run's start closes that run too (its RunStarted, as the source has it, then
//   RunInterrupted): every copied event belongs to a run that started and ended in the fork.
// - `at` must be the position of an event in the source's stream: anything else is a RuntimeError naming
//   the field, and nothing is written.
import { createHash } from "node:crypto";
import { asContextId, type ContextId } from "../events/ids.ts";
import type { NewEvent, RecordedEvent } from "../events/schema.ts";
import type { ContextView } from "../projections/contexts.ts";
import { runEndOf } from "../projections/runStatus.ts";
import type { EventStore } from "../events/store.ts";
import type { Projections } from "../projections/engine.ts";
import type { Configuration } from "./configuration.ts";
import { RuntimeError } from "./errors.ts";
import { checkId, checkOptions, checkPosition, invalid } from "./validate.ts";

export type ForkOptions = { at: number };

/** Forks context `id` at log position `options.at`; returns the fork's view. */
export const forkContext = async (
  parts: { readonly store: EventStore; readonly projections: Projections; readonly config: Configuration },
  id: string,
  options: ForkOptions,
): Promise<ContextView> => {
  checkId("contextId", id);
  const at = checkPosition("at", checkOptions(options, "options").at);
  if (at === undefined) throw invalid("at", "the log position of an event of the context", "nothing");
  const source = await parts.store.readStream(id);
  if (source.length === 0) throw new RuntimeError("not_found", `No context '${id}'.`, { field: "contextId" });
  const cut = source.findIndex((e) => e.globalPosition === at);
  if (cut < 0) {
    const expected = `the log position of an event of context ${id} (${source.length} events between positions ${source[0]!.globalPosition} and ${source.at(-1)!.globalPosition})`;
    throw new RuntimeError("invalid", `at: expected ${expected}, got ${at}.`, { field: "at", expected });
  }
  const forkId = asContextId(parts.config.clock.uuid());
  await parts.store.append(forkId, forkEvents(source.slice(0, cut + 1), source.slice(cut + 1), forkId, at), {
    expectedVersion: "no_stream",
  });
  await parts.projections.catchUp();
  return (await parts.projections.contexts.get(forkId))!;
};

const forkEvents = (history: RecordedEvent[], after: RecordedEvent[], forkId: ContextId, at: number): NewEvent[] => {
  const open = new Set<string>();
  // Messages whose run the cut left unstarted, by run id.
  const unstarted = new Set<string>();
  const started = new Set<string>();
  let model = "unknown";
  const out: NewEvent[] = history.map((e): NewEvent => {
    if (e.type === "MessageReceived" && !started.has(e.data.runId)) unstarted.add(e.data.runId);
    if (e.type === "RunStarted") {
      started.add(e.data.runId);
      open.add(e.data.runId);
      unstarted.delete(e.data.runId);
      model = e.data.model;
    }
    const end = runEndOf(e);
    if (end) open.delete(end.runId);
    if (e.type === "ContextCreated") {
      // The source's budget is its tree's (the fork starts without one, as a root created without one does).
      const { budget: _sourceBudget, ...created } = e.data;
      const data = {
        ...created,
        contextId: forkId,
        agentNumber: 0,
        depth: 0,
        kind: "root" as const,
        parentContextId: null,
        parentAgentNumber: null,
        rootContextId: forkId,
        slot: null,
        forkedFrom: { contextId: e.streamId, position: at },
      };
      return { type: e.type, data, metadata: e.metadata };
    }
    const data = renameOwnedIds(e.data, forkId) as Record<string, unknown>;
    if (e.type === "RunStarted") data["superior"] = null;
    return {
      type: e.type,
      data: e.type === "ApprovalRequested" ? { ...data, contextId: forkId } : data,
      metadata: e.metadata,
    } as NewEvent;
  });
  for (const runId of open) out.push({ type: "RunInterrupted", data: { runId } } as NewEvent);
  for (const runId of unstarted) {
    const start = after.find((e) => e.type === "RunStarted" && e.data.runId === runId);
    const runModel = start?.type === "RunStarted" ? start.data.model : model;
    out.push(
      { type: "RunStarted", data: { runId, model: runModel, superior: null } } as NewEvent,
      { type: "RunInterrupted", data: { runId } } as NewEvent,
    );
  }
  return out;
};

/**
 * The keys that name ids the context owns, and each one's name in the fork. Both depend only on the id and the
 * fork, so a request and its decision (a job's start and its end) get the same new id without a lookup table.
 */
const OWNED_IDS: Readonly<Record<string, (id: string, forkId: ContextId) => string>> = {
  jobId: (id, forkId) => `${id}~fork-${forkId.slice(0, 8)}`,
  approvalId: (id, forkId) => derivedUuid(`${forkId}/${id}`),
};

/** `data` with every owned id string in it renamed for the fork (same shape otherwise). */
const renameOwnedIds = (data: unknown, forkId: ContextId): unknown => {
  if (Array.isArray(data)) return data.map((d) => renameOwnedIds(d, forkId));
  if (data === null || typeof data !== "object") return data;
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => {
      const rename = Object.hasOwn(OWNED_IDS, k) ? OWNED_IDS[k] : undefined;
      return [k, rename && typeof v === "string" ? rename(v, forkId) : renameOwnedIds(v, forkId)];
    }),
  );
};

/** A UUID (version 8, RFC 9562's custom layout) drawn from SHA-256 of `name`: the schema wants approval ids to be UUIDs. */
const derivedUuid = (name: string): string => {
  const bytes = createHash("sha256").update(name).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
