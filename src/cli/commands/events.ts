// `actorzero events`: the raw log, one line (or one JSON object) per event; `--follow` keeps reading as others append.
import { z } from "zod";
import { EVENT_TYPES, type EventType, type RecordedEvent } from "../../events/schema.ts";
import type { Projections } from "../../projections/engine.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT, usageError } from "../errors.ts";
import { eventJson, eventLine } from "../eventLine.ts";
import { intFlag, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { describeLocation, locate } from "../openLog.ts";
import { EVENT_INDENT, screenWidth, wrapText } from "../screen.ts";

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
  summary: "Print the raw event log, in order; filter by context and type; follow it live as others append.",
  usage: ["events [--context <id>] [--type <T,…>] [--after <position>] [--limit <n>] [--follow] [--json]"],
  options: {
    ...STORE_OPTIONS,
    context: { type: "string", value: "<id>", description: "only this context's stream (an id or a unique prefix)" },
    type: { type: "string", value: "<T,…>", description: "only these event types, e.g. RunStarted,RunCompleted" },
    after: { type: "string", value: "<position>", description: "only events after this log position" },
    limit: { type: "string", value: "<n>", description: "at most n events" },
    follow: { type: "boolean", description: "keep printing events as others append them (PostgreSQL, or the process holding a data dir)" },
    full: { type: "boolean", description: "do not cut texts in the lines" },
    json: { type: "boolean", description: "one JSON object per line: { position, eventId, streamId, streamVersion, type, schemaVersion, recordedAt, data, metadata }" },
  },
  details: `Lines read: position, time (UTC), agent and profile, context, type, gist.
On PostgreSQL --follow reads what every process appends. A PGlite data dir belongs to one process at a time:
while actorzero run, send or serve holds it, this command reads (and --follow follows) through that process.`,
  schema: Values as z.ZodType<Values>,
};

export const eventsCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "events");
  if (v.follow && where.kind === "memory") throw usageError("--follow needs a log another process writes: a data dir or PostgreSQL");
  return withLog(where, { create: false, readOnly: true }, async ({ store, projections, holder }) => {
    if (v.follow && where.kind === "pglite" && !holder) {
      throw usageError(
        `--follow on a PGlite data dir follows the process that holds it (actorzero run, send or serve), and none does now: nothing else can append while this command reads ${where.shown}. Start the run first, or use PostgreSQL`,
      );
    }
    const contextId = v.context ? (await resolveContext(projections, v.context, where)).id : undefined;
    const labels = await labeller(projections);
    const types = v.type ? new Set<string>(v.type) : null;
    const width = screenWidth(io.out);
    let printed = 0;
    let last = v.after ?? 0;
    const show = (e: RecordedEvent) => {
      last = Math.max(last, e.globalPosition);
      if (contextId && e.streamId !== contextId) return true;
      if (types && !types.has(e.type)) return true;
      if (v.limit !== undefined && printed >= v.limit) return false;
      io.print(v.json ? eventJson(e) : wrapText(eventLine(e, labels.of(e), io.paint, v.full ? Number.POSITIVE_INFINITY : 100), width, EVENT_INDENT));
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
    let holderLeft = false;
    await new Promise<void>((resolve) => {
      const onEvent = (e: RecordedEvent) => {
        labels.learn(e);
        if (!show(e)) end();
      };
      // Through a holder the stream ends when it exits (the dir is free then, and nothing appends any more).
      const live = holder ? holder.follow(last, onEvent) : null;
      const unsubscribe = live ? () => live.close() : store.subscribe(last, onEvent);
      let over = false;
      const end = () => {
        over = true;
        unsubscribe();
        resolve();
      };
      void live?.ended.then(() => {
        if (over) return;
        holderLeft = true;
        end();
      });
      process.once("SIGINT", end);
      process.once("SIGTERM", end);
    });
    if (holderLeft) io.warn("actorzero: the process holding the data dir closed it; nothing more to follow");
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
