// `actorzero audit <id>`: the full story of a context and everything it delegated.
import { loadAudit, subtreeIds } from "../../projections/auditLoad.ts";
import { auditText } from "../auditText.ts";
import type { RecordedEvent } from "../../events/schema.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { auditTruth, runTruth } from "../deadRuns.ts";
import { EXIT } from "../errors.ts";
import { defineCommand, booleanFlag, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import { locate } from "../openLog.ts";
import { screenWidth, wrapText } from "../screen.ts";

export const AUDIT_TEXT_MAX = 160;

export const auditSpec = defineCommand({
  name: "audit",
  summary:
    "The full story of a context and everything it delegated: messages, model and tool calls, children, outcomes.",
  usage: ["audit <id> [--full] [--json]"],
  args: [{ name: "<id>", id: true }],
  flags: {
    ...STORE_FLAGS,
    full: booleanFlag(`show texts, arguments and results whole (cut at ${AUDIT_TEXT_MAX} characters otherwise)`),
    ...JSON_FLAG,
  },
  details: `<id> is a context id or a unique prefix of one (see actorzero contexts).
Each line names the time and the log position (#n) of the event it comes from. The last line says
whether the log verified (its hash chain, stream versions and rows; see actorzero verify-log).
--json prints the audit report (format 1, documented in docs/cli.md): texts are never cut there.`,
});
type Values = ValuesOf<typeof auditSpec>;

export const auditCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "audit");
  return withLog(where, { create: false, readOnly: true }, async ({ store, projections, holder }) => {
    const view = await resolveContext(projections, v.positionals["<id>"]!, where);
    const truth = await runTruth(where, holder ? null : store.sql);
    const streams = new Map<string, RecordedEvent[]>();
    for (const id of await subtreeIds(projections, view.id)) streams.set(id, await store.readStream(id));
    // Runs cut short read as interrupted, timed to their last event (nothing is written here).
    const report = auditTruth(await loadAudit(store, projections, view.id), truth, streams);
    if (v.json) {
      io.print(JSON.stringify(report));
      return EXIT.ok;
    }
    // A fork says where it came from with its identity, before its story.
    const created = (await store.readStream(view.id, 1)).find((e) => e.type === "ContextCreated");
    const from = created?.type === "ContextCreated" ? created.data.forkedFrom : undefined;
    const width = screenWidth(io.out);
    const text = auditText(report, {
      max: v.full ? Number.POSITIVE_INFINITY : AUDIT_TEXT_MAX,
      paint: io.paint,
      ...(from ? { forkedFrom: from } : {}),
    });
    io.out.write(wrapText(text, width));
    if (holder) {
      io.print(
        wrapText(
          io.paint.dim(
            "log not verified here: it was read through the process that holds the data dir (actorzero verify-log once it is free)",
          ),
          width,
          "",
        ),
      );
      return EXIT.ok;
    }
    // What the audit says is worth what the log is: say whether it holds together (the log only; verify-log does the rest).
    const log = await store.verify();
    const first = log.problems[0];
    io.print(
      wrapText(
        first
          ? io.paint.red(
              `log NOT verified: ${first.position === null ? "" : `position ${first.position}: `}${first.problem} (actorzero verify-log lists every problem)`,
            )
          : `log verified: hash chain intact over ${log.events} events, head ${log.head.position}:${(log.head.hash ?? "").slice(0, 16)}…${log.unchained > 0 ? ` (${log.unchained} events predate the chain)` : ""}`,
        width,
        "",
      ),
    );
    return EXIT.ok;
  });
};
