// `actorzero contexts`: every context the log holds, as a table (or JSON).
import { z } from "zod";
import type { ContextView } from "../../projections/contexts.ts";
import type { UsageView } from "../../projections/usage.ts";
import { withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { JSON_OPTION, positionals, STORE_OPTIONS, StoreFlags, type CommandSpec } from "../flags.ts";
import { count, table, timestamp } from "../format.ts";
import { locate } from "../openLog.ts";
import { paintStatus, shownStatus, type Shown } from "../status.ts";

const SHOWN = ["idle", "running", "completed", "stopped", "failed", "interrupted"] as const satisfies readonly Shown[];

const Values = StoreFlags.extend({
  positionals: positionals("contexts", []),
  status: z.enum(SHOWN, { message: `--status must be one of ${SHOWN.join(", ")}` }).optional(),
  json: z.boolean().optional(),
});
type Values = z.infer<typeof Values>;

export const contextsSpec: CommandSpec<Values> = {
  name: "contexts",
  summary: "List every context in the log: agent number, profile, name, status, parent, tokens.",
  usage: ["contexts [--status <s>] [--json]"],
  options: {
    ...STORE_OPTIONS,
    status: { type: "string", value: "<status>", description: `only contexts in this state: ${SHOWN.join(", ")}` },
    ...JSON_OPTION,
  },
  details: "--json prints an array of { ...context view, shownStatus, usage } in creation order.",
  schema: Values as z.ZodType<Values>,
};

export type ContextRow = ContextView & { shownStatus: Shown; usage: UsageView | null };

export const contextsCommand = async (v: Values, io: Io): Promise<number> =>
  withLog(locate(v, "contexts"), { create: false }, async ({ projections }) => {
    const views = await projections.contexts.list();
    const rows: ContextRow[] = [];
    for (const view of views) {
      const shown = shownStatus(view);
      if (v.status && shown !== v.status) continue;
      rows.push({ ...view, shownStatus: shown, usage: await projections.usage.of(view.id) });
    }
    if (v.json) {
      io.print(JSON.stringify(rows));
      return EXIT.ok;
    }
    if (rows.length === 0) {
      io.print(v.status ? `no ${v.status} contexts` : `no contexts yet: start one with actorzero run "<task>"`);
      return EXIT.ok;
    }
    const p = io.paint;
    io.print(
      table(
        ["CONTEXT", "AGENT", "PROFILE", "NAME", "STATUS", "PARENT", "TOKENS", "UPDATED"],
        rows.map((r) => [
          r.id.slice(0, 8),
          `A${r.agentNumber}`,
          r.profile,
          r.name.length > 32 ? `${r.name.slice(0, 31)}…` : r.name,
          paintStatus(r.shownStatus, p) + (r.paused ? p.yellow(" (paused)") : ""),
          r.parentContextId ? r.parentContextId.slice(0, 8) : p.dim("–"),
          count((r.usage?.inputTokens ?? 0) + (r.usage?.outputTokens ?? 0)),
          p.dim(timestamp(r.updatedAt)),
        ]),
        p.dim,
      ),
    );
    io.print(p.dim(`${rows.length} context${rows.length === 1 ? "" : "s"}; see one with actorzero audit <id> or actorzero tree <id>`));
    return EXIT.ok;
  });
