// `actorzero audit <id>`: the full story of a context and everything it delegated.
import { z } from "zod";
import { loadAudit } from "../../projections/auditLoad.ts";
import { auditText } from "../auditText.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { JSON_OPTION, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { locate } from "../openLog.ts";

const Values = StoreFlags.extend({
  positionals: positionals("audit", [{ name: "<id>", id: true }]),
  full: z.boolean().optional(),
  json: z.boolean().optional(),
});
type Values = z.infer<typeof Values>;

export const AUDIT_TEXT_MAX = 160;

export const auditSpec: CommandSpec<Values> = {
  name: "audit",
  summary: "The full story of a context and everything it delegated: messages, model and tool calls, children, outcomes.",
  usage: ["audit <id> [--full] [--json]"],
  options: {
    ...STORE_OPTIONS,
    full: { type: "boolean", description: `show texts, arguments and results whole (cut at ${AUDIT_TEXT_MAX} characters otherwise)` },
    ...JSON_OPTION,
  },
  details: `<id> is a context id or a unique prefix of one (see actorzero contexts).
Each line names the time and the log position (#n) of the event it comes from.
--json prints the audit report (format 1, documented in docs/cli.md): texts are never cut there.`,
  schema: Values as z.ZodType<Values>,
};

export const auditCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "audit");
  return withLog(where, { create: false }, async ({ store, projections }) => {
    const view = await resolveContext(projections, v.positionals["<id>"]!, where);
    const report = await loadAudit(store, projections, view.id);
    if (v.json) io.print(JSON.stringify(report));
    else io.out.write(auditText(report, { max: v.full ? Number.POSITIVE_INFINITY : AUDIT_TEXT_MAX, paint: io.paint }));
    return EXIT.ok;
  });
};
