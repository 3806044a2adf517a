// `actorzero events`: the raw log, one line (or one JSON object) per event; `--follow` keeps reading on PostgreSQL.
import { z } from "zod";
import { EVENT_TYPES, type EventType, type RecordedEvent } from "../../events/schema.ts";
import type { Projections } from "../../projections/engine.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT, usageError } from "../errors.ts";
import { eventJson, eventLine } from "../eventLine.ts";
import { intFlag, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { describeLocation, locate } from "../openLog.ts";

const Values = StoreFlags.extend({
  positionals: positionals("events", []),
  context: z.string().min(1, "--context needs a context id").optional(),
  type: z
    .string()
    .transform((s) => s.split(",").map((t) => t.trim()).filter(Boolean))
    .refine((ts) => ts.length > 0 && ts.every((t) => (EVENT_TYPES as string[]).includes(t)), {
      message: `--type takes event types separated by commas: ${EVENT_TYPES.join(", ")}`,
    })
    .transform((ts) => ts as EventType[])
    .optional(),
  after: intFlag("--after", 0, "a log position").optional(),
  limit: intFlag("--limit", 1).optional(),
  follow: z.boolean().optional(),
  full: z.boolean().optional(),
  json: z.boolean().optional(),
});
type Values = z.infer<typeof Values>;

export const eventsSpec: CommandSpec<Values> = {
  name: "events",
  summary: "Print the raw event log, in order; filter by context and type; follow it live on PostgreSQL.",
  usage: ["events [--context <id>] [--type <T,…>] [--after <position>] [--limit <n>] [--follow] [--json]"],
  options: {
    ...STORE_OPTIONS,
    context: { type: "string", value: "<id>", description: "only this context's stream (an id or a unique prefix)" },
    type: { type: "string", value: "<T,…>", description: "only these event types, e.g. RunStarted,RunCompleted" },
    after: { type: "string", value: "<position>", description: "only events after this log position" },
    limit: { type: "string", value: "<n>", description: "at most n events" },
    follow: { type: "boolean", description: "keep printing events as others append them (PostgreSQL only)" },
    full: { type: "boolean", description: "do not cut texts in the lines" },
    json: { type: "boolean", description: "one JSON object per line: { position, eventId, streamId, streamVersion, type, schemaVersion, recordedAt, data, metadata }" },
  },
  details: `Lines read: position, time (UTC), agent and profile, context, type, gist.
A PGlite data dir belongs to one process at a time, so --follow needs PostgreSQL (--store postgres://…);
to watch a run as it happens on PGlite, use actorzero run --events.`,
  schema: Values as z.ZodType<Values>,
};

export const eventsCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "events");
  if (v.follow && where.kind !== "postgres") {
    throw usageError(
      "--follow needs PostgreSQL (--store postgres://…): a PGlite data dir belongs to one process at a time, so nothing else can append while this command reads it. To watch a run live, use actorzero run --events",
    );
  }
  return withLog(where, { create: false }, async ({ store, projections }) => {
    const contextId = v.context ? (await resolveContext(projections, v.context, where)).id : undefined;
    const labels = await labeller(projections);
    const types = v.type ? new Set<string>(v.type) : null;
    let printed = 0;
    let last = v.after ?? 0;
    const show = (e: RecordedEvent) => {
      last = Math.max(last, e.globalPosition);
      if (contextId && e.streamId !== contextId) return true;
      if (types && !types.has(e.type)) return true;
      if (v.limit !== undefined && printed >= v.limit) return false;
      io.print(v.json ? eventJson(e) : eventLine(e, labels.of(e), io.paint, v.full ? Number.POSITIVE_INFINITY : 100));
      printed++;
      return true;
    };
    const source: AsyncIterable<RecordedEvent> | RecordedEvent[] = contextId
      ? (await store.readStream(contextId)).filter((e) => e.globalPosition > (v.after ?? 0))
      : store.iterateAll(v.after ?? 0);
    for await (const e of source) {
      labels.learn(e);
      if (!show(e)) break;
    }
    if (!v.follow || (v.limit !== undefined && printed >= v.limit)) {
      if (!v.json && printed === 0) io.warn("no events match");
      return EXIT.ok;
    }
    io.warn(`actorzero: following ${describeLocation(where)} after position ${last}; Ctrl-C stops`);
    await new Promise<void>((resolve) => {
      const unsubscribe = store.subscribe(last, (e) => {
        labels.learn(e);
        if (!show(e)) {
          unsubscribe();
          resolve();
        }
      });
      const end = () => {
        unsubscribe();
        resolve();
      };
      process.once("SIGINT", end);
      process.once("SIGTERM", end);
    });
    return EXIT.ok;
  });
};

/** `A1 researcher` for each stream, from the projections and from ContextCreated events as they come. */
const labeller = async (projections: Projections) => {
  const known = new Map((await projections.contexts.list()).map((c) => [c.id, `A${c.agentNumber} ${c.profile}`]));
  return {
    learn(e: RecordedEvent) {
      if (e.type === "ContextCreated") known.set(e.streamId, `A${e.data.agentNumber} ${e.data.profile}`);
    },
    of: (e: RecordedEvent) => known.get(e.streamId) ?? "?",
  };
};
