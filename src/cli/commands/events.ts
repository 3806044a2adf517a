// `actorzero events`: the raw log, one line (or one JSON object) per event; `--follow` keeps reading as others append.
import { z } from "zod";
import { EVENT_TYPES, type EventType, type RecordedEvent } from "../../events/schema.ts";
import type { ProjectionQueries } from "../../projections/engine.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT, usageError } from "../errors.ts";
import { eventJson, eventLine } from "../eventLine.ts";
import { intFlag } from "../flags.ts";
import { booleanFlag, defineCommand, STORE_FLAGS, textFlag, type ValuesOf } from "../defineCommand.ts";
import { describeLocation, locate } from "../openLog.ts";
import { EVENT_INDENT, screenWidth, wrapText } from "../screen.ts";

export const eventsSpec = defineCommand({
  name: "events",
  summary: "Print the raw event log, in order; filter by context and type; follow it live as others append.",
  usage: ["events [--context <id>] [--type <T,…>] [--after <position>] [--limit <n>] [--follow] [--json]"],
  args: [],
  flags: {
    ...STORE_FLAGS,
    context: textFlag("<id>", "only this context's stream (an id or a unique prefix)", "--context needs a context id"),
    type: {
      type: "string",
      value: "<T,…>",
      description: "only these event types, e.g. RunStarted,RunCompleted",
      schema: z
        .string()
        .transform((s) =>
          s
            .split(",")
            .map((t) => t.trim())
            .filter(Boolean),
        )
        .refine((ts) => ts.length > 0 && ts.every((t) => (EVENT_TYPES as string[]).includes(t)), {
          message: `--type takes event types separated by commas: ${EVENT_TYPES.join(", ")}`,
        })
        .transform((ts) => ts as EventType[])
        .optional(),
    },
    after: {
      type: "string",
      value: "<position>",
      description: "only events after this log position",
      schema: intFlag("--after", 0, "a log position").optional(),
    },
    limit: { type: "string", value: "<n>", description: "at most n events", schema: intFlag("--limit", 1).optional() },
    follow: booleanFlag(
      "keep printing events as others append them, until Ctrl-C (waits for a process to hold a data dir)",
    ),
    full: booleanFlag("do not cut texts in the lines"),
    json: booleanFlag(
      "one JSON object per line: { position, eventId, streamId, streamVersion, type, schemaVersion, recordedAt, data, metadata }",
    ),
  },
  details: `Lines read: position, time (UTC), agent and profile, context, type, gist.
--follow keeps printing until Ctrl-C, like tail -f. On PostgreSQL it reads what every process appends. A PGlite
data dir belongs to one process at a time: while actorzero run, send or serve holds it, this command reads and
follows through that process; when none does (or the one it followed exits), it waits, holding nothing, and
follows the next one from where it left off.`,
});
type Values = ValuesOf<typeof eventsSpec>;

export const eventsCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "events");
  if (v.follow && where.kind === "memory")
    throw usageError("--follow needs a log another process writes: a data dir or PostgreSQL");
  // Ctrl-C (or SIGTERM) ends a follower; nothing else does.
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  if (v.follow) {
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  }
  try {
    const printer = await withLog(where, { create: false, readOnly: true }, async ({ store, projections, holder }) => {
      const contextId = v.context ? (await resolveContext(projections, v.context, where)).id : undefined;
      const printer = await printerFor(v, io, projections, contextId);
      const source: AsyncIterable<RecordedEvent> | RecordedEvent[] = contextId
        ? (await store.readStream(contextId)).filter((e) => e.globalPosition > (v.after ?? 0))
        : store.iterateAll(v.after ?? 0);
      for await (const e of source) if (!printer.show(e)) break;
      if (!v.follow || printer.full()) {
        if (!v.json && printer.printed() === 0) io.warn("no events match");
        return null;
      }
      io.warn(
        where.kind === "pglite" && !holder
          ? `actorzero: no process holds ${where.shown} now; waiting for one (actorzero run, send or serve) to follow after position ${printer.last()}; Ctrl-C stops`
          : `actorzero: following ${describeLocation(where)} after position ${printer.last()}; Ctrl-C stops`,
      );
      if (where.kind === "postgres") {
        // Every process appends to the same server: one subscription reads them all, until Ctrl-C.
        await new Promise<void>((resolve) => {
          const unsubscribe = store.subscribe(printer.last(), (e) => {
            if (!printer.show(e)) end();
          });
          const end = () => {
            unsubscribe();
            resolve();
          };
          if (stop.signal.aborted) end();
          else stop.signal.addEventListener("abort", end, { once: true });
        });
        return null;
      }
      return { printer, holder: holder ?? null };
    });
    // A PGlite data dir: followed outside withLog, so this command holds nothing while it waits for a holder.
    if (printer !== null && where.kind === "pglite") {
      const { followHolders } = await import("../followHolders.ts");
      await followHolders({
        dataDir: where.dataDir,
        first: printer.holder,
        after: () => printer.printer.last(),
        onEvent: (e) => printer.printer.show(e),
        note: (line) => io.warn(line),
        signal: stop.signal,
      });
    }
    return EXIT.ok;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
};

/** Prints the events that pass the filters, up to --limit, and keeps the last position seen. */
const printerFor = async (v: Values, io: Io, projections: ProjectionQueries, contextId: string | undefined) => {
  const labels = await labeller(projections);
  const types = v.type ? new Set<string>(v.type) : null;
  const width = screenWidth(io.out);
  let printed = 0;
  let last = v.after ?? 0;
  return {
    /** False once --limit events are printed. */
    show(e: RecordedEvent): boolean {
      // A holder streams from a position: an event already printed (or before --after) is not shown twice.
      if (e.globalPosition <= last) return true;
      last = e.globalPosition;
      labels.learn(e);
      if (contextId && e.streamId !== contextId) return true;
      if (types && !types.has(e.type)) return true;
      if (v.limit !== undefined && printed >= v.limit) return false;
      io.print(
        v.json
          ? eventJson(e)
          : wrapText(
              eventLine(e, labels.of(e), io.paint, v.full ? Number.POSITIVE_INFINITY : 100),
              width,
              EVENT_INDENT,
            ),
      );
      printed++;
      return v.limit === undefined || printed < v.limit;
    },
    full: () => v.limit !== undefined && printed >= v.limit,
    printed: () => printed,
    last: () => last,
  };
};

/** `A1 researcher` for each stream, from the projections and from ContextCreated events as they come. */
const labeller = async (projections: ProjectionQueries) => {
  const known = new Map((await projections.contexts.list()).map((c) => [c.id, `A${c.agentNumber} ${c.profile}`]));
  return {
    learn(e: RecordedEvent) {
      if (e.type === "ContextCreated") known.set(e.streamId, `A${e.data.agentNumber} ${e.data.profile}`);
    },
    of: (e: RecordedEvent) => known.get(e.streamId) ?? "?",
  };
};
