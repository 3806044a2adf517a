// The runtime's read side: views from the projections (caught up first), the log itself, and live subscriptions.
//
// Requirements:
// - Every query refuses bad input with a RuntimeError naming the field; a view query catches the projections up first.
// - `events()` returns everything asked for; `eventsPage()` one page and where the next starts.
// - A subscription starts at the log's head unless `after` says where; a listener that did not ask for deltas never gets one.
import type { RecordedEvent } from "../events/schema.ts";
import type { EventStore, Unsubscribe } from "../events/store.ts";
import type { ContextView } from "../projections/contexts.ts";
import type { Projections } from "../projections/engine.ts";
import type { EventsPage, EventsQuery, Runtime } from "./api.ts";
import type { Configuration } from "./configuration.ts";
import { subscribeLive, type LiveEvent } from "./liveDeltas.ts";
import { checkId, checkLimit, checkOptions, checkPosition, invalid } from "./validate.ts";

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

type ReadSide = Pick<
  Runtime,
  "context" | "contexts" | "children" | "history" | "usage" | "events" | "eventsPage" | "subscribe"
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
