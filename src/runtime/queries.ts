// The runtime's read side: views from the projections (caught up first), the log itself, and live subscriptions.
//
// Requirements:
// - Every query refuses bad input with a RuntimeError naming the field; a view query catches the projections up first.
// - `events()` returns everything asked for; `eventsPage()` one page and where the next starts.
// - A subscription starts at the log's head unless `after` says where; a listener that did not ask for deltas never gets one.
// - What embedders asked the raw store and the projection engine for is a query here (the settled position, the
//   audit, verification, finding a run), so `Runtime` exposes neither.
import type { RecordedEvent } from "../events/schema.ts";
import type { LogAnchor } from "../events/verifyLog.ts";
import type { EventStore, Unsubscribe } from "../events/store.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { Projections } from "../projections/engine.ts";
import { loadAudit } from "../projections/auditLoad.ts";
import { verifyWholeLog } from "../projections/wholeLogVerification.ts";
import { runNamed, runStartedByMessage } from "../events/runLookup.ts";
import { RuntimeError } from "./errors.ts";
import type { EventsPage, EventsQuery, Runtime } from "./api.ts";
import type { Configuration } from "./configuration.ts";
import { subscribeLive, type LiveEvent } from "./liveDeltas.ts";
import { checkId, checkLimit, checkOptionalString, checkOptions, checkPosition, invalid } from "./validate.ts";

const checkEventsQuery = (opts: EventsQuery): { after: number; contextId?: string; limit?: number } => {
  const raw = checkOptions(opts, "options");
  const contextId = raw.contextId === undefined ? undefined : checkId("contextId", raw.contextId);
  const limit = checkLimit(raw.limit);
  return {
    after: checkPosition("after", raw.after) ?? 0,
    ...(contextId ? { contextId } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
};

const checkAnchor = (v: unknown): LogAnchor => {
  const a = checkOptions(v, "since");
  if (
    checkPosition("since.position", a.position) === undefined ||
    typeof a.hash !== "string" ||
    !/^[0-9a-f]{64}$/.test(a.hash)
  )
    throw invalid("since", "{ position, hash } as verify-log --print-head prints it", JSON.stringify(v));
  return { position: a.position as number, hash: a.hash };
};

type ReadSide = Pick<
  Runtime,
  | "context"
  | "contexts"
  | "children"
  | "history"
  | "usage"
  | "events"
  | "eventsPage"
  | "subscribe"
  | "settledPosition"
  | "audit"
  | "verify"
  | "findRun"
>;

/** The `Runtime` members that only read (see the requirements above). */
export const readQueries = ({
  store,
  projections,
  config,
}: {
  store: EventStore;
  projections: Projections;
  config: Configuration;
}): ReadSide => {
  const catchUp = () => projections.catchUp();
  return {
    async context(id) {
      checkId("id", id);
      await catchUp();
      return projections.contexts.get(id);
    },
    async contexts(filter) {
      await catchUp();
      return projections.contexts.list(filter);
    },
    async children(id) {
      checkId("id", id);
      await catchUp();
      const kids = await projections.tree.children(id);
      const views = await Promise.all(kids.map((k) => projections.contexts.get(k.contextId)));
      return views.filter((v): v is ContextView => v !== null);
    },
    async history(id, options) {
      checkId("id", id);
      const full = checkOptions(options, "options").full;
      if (full !== undefined && typeof full !== "boolean") throw invalid("full", "true or false", JSON.stringify(full));
      await catchUp();
      return projections.transcript.history(id, full ? { full } : {});
    },
    async usage(id) {
      checkId("id", id);
      await catchUp();
      const own = await projections.usage.of(id);
      const view = await projections.contexts.get(id);
      const rollup = view && view.rootContextId === id ? await projections.usage.rollup(id) : null;
      return { own, rollup };
    },

    /** The log itself: everything asked for (all pages of it), never a silently cut first page. */
    async events(opts: EventsQuery = {}): Promise<RecordedEvent[]> {
      const q = checkEventsQuery(opts);
      if (q.contextId) {
        const all = await store.readStream(q.contextId);
        return all.filter((e) => e.globalPosition > q.after).slice(0, q.limit ?? Infinity);
      }
      const out: RecordedEvent[] = [];
      for await (const e of store.iterateAll(q.after)) {
        out.push(e);
        if (q.limit !== undefined && out.length >= q.limit) break;
      }
      return out;
    },

    async eventsPage(opts: EventsQuery = {}): Promise<EventsPage> {
      const q = checkEventsQuery(opts);
      const limit = q.limit ?? 1000;
      // One more than asked says whether a next page exists without a second read.
      const rows = q.contextId
        ? (await store.readStream(q.contextId)).filter((e) => e.globalPosition > q.after).slice(0, limit + 1)
        : await store.readAll(q.after, limit + 1);
      const events = rows.slice(0, limit);
      return { events, next: rows.length > limit ? events.at(-1)!.globalPosition : null };
    },

    settledPosition: () => (store.settledPosition ? store.settledPosition() : store.headPosition()),

    async audit(id, opts = {}) {
      checkId("id", id);
      const at = checkPosition("at", checkOptions(opts, "options").at);
      await catchUp();
      if (!(await projections.contexts.get(id))) throw new RuntimeError("not_found", `No context '${id}'.`);
      try {
        return await loadAudit(store, projections, id, at === undefined ? {} : { until: at });
      } catch (e) {
        // The context is known now; cut before its first fact, the log does not hold it yet.
        if (at !== undefined && /^no ContextCreated/.test((e as Error).message))
          throw new RuntimeError("not_found", `Context '${id}' did not exist yet at position ${at}.`);
        throw e;
      }
    },

    async verify(opts = {}) {
      const o = checkOptions(opts, "options");
      if (o.projections !== undefined && typeof o.projections !== "boolean")
        throw invalid("projections", "true or false", JSON.stringify(o.projections));
      const since = o.since === undefined ? undefined : checkAnchor(o.since);
      if (o.projections) return verifyWholeLog(store, since ? { since } : {}, projections);
      return { ...(await store.verify(since ? { since } : {})), projections: null };
    },

    async findRun(query) {
      const q = checkOptions(query, "query");
      if (q.runId !== undefined) return runNamed(store.sql, checkId("runId", q.runId));
      if (q.via !== "a2a" && q.via !== "mcp") throw invalid("via", '"mcp" or "a2a"', JSON.stringify(q.via));
      const messageId = checkOptionalString("messageId", q.messageId);
      if (messageId === undefined) throw invalid("query", "{ runId } or { messageId, via }", JSON.stringify(q));
      return runStartedByMessage(store.sql, messageId, q.via);
    },

    // One body for both overloads: a listener that did not ask for deltas never gets one.
    async subscribe(
      listener: (e: never) => void,
      opts: { after?: number; deltas?: boolean } = {},
    ): Promise<Unsubscribe> {
      if (typeof listener !== "function") throw invalid("listener", "a function", typeof listener);
      const after = checkPosition("after", checkOptions(opts, "options").after) ?? (await store.headPosition());
      return subscribeLive(
        store,
        config.deltas,
        after,
        listener as (e: LiveEvent) => void,
        checkOptions(opts, "options").deltas === true,
      );
    },
  };
};
