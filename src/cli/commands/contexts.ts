// `actorzero contexts`: every context the log holds, as a table (or JSON).
import { z } from "zod";
import type { ContextView } from "../../projections/contexts.ts";
import type { UsageView } from "../../projections/usage.ts";
import { withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { defineCommand, JSON_FLAG, STORE_FLAGS, textFlag, type ValuesOf } from "../defineCommand.ts";
import type { FitStep } from "../fitColumns.ts";
import { count, timestamp } from "../format.ts";
import { fitTable, screenWidth, wrapText } from "../screen.ts";
import { locate } from "../openLog.ts";
import { firstMessage, shortTask } from "../rootTask.ts";
import { runTruth } from "../deadRuns.ts";
import { paintStatus, type Shown, statusNote } from "../status.ts";
import { extendHint } from "../budgetText.ts";

const SHOWN = ["idle", "running", "completed", "stopped", "failed", "interrupted"] as const satisfies readonly Shown[];

export const contextsSpec = defineCommand({
  name: "contexts",
  summary: "List every context in the log: agent number, profile, name, status, parent, tokens.",
  usage: ["contexts [--status <s>] [--grep <text>] [--json]"],
  args: [],
  flags: {
    ...STORE_FLAGS,
    status: {
      type: "string",
      value: "<status>",
      description: `only contexts in this state: ${SHOWN.join(", ")}`,
      schema: z.enum(SHOWN, { message: `--status must be one of ${SHOWN.join(", ")}` }).optional(),
    },
    grep: textFlag(
      "<text>",
      "only the trees whose root's task (its first message) contains this text (any case)",
      "--grep needs a text to look for",
    ),
    ...JSON_FLAG,
  },
  details: `Each root shows its task: the first message it received, shortened.
A run with no end in the log whose process is gone shows as interrupted (this command writes nothing; the next
run, send or stop on the log records it).
--json prints an array of { ...context view, shownStatus, usage, task } in creation order (task: the root's first message, null for a subordinate).`,
});
type Values = ValuesOf<typeof contextsSpec>;

// On a narrow terminal the id, the agent, the name's start and the status (with what it waits on) stay;
// the time and the parent go first, then the task shrinks (its start stays).
const NARROWER: FitStep[] = [
  { shrink: 8, to: 24 },
  { drop: 7 },
  { drop: 5 },
  { shrink: 3, to: 14 },
  { drop: 6 },
  { shrink: 8, to: 12 },
  { shrink: 2, to: 8 },
  { shrink: 3, to: 8 },
  { drop: 8 },
];

/** `task`: a root's first message (null for a subordinate, or a root not yet asked anything). */
export type ContextRow = ContextView & { shownStatus: Shown; usage: UsageView | null; task: string | null };

export const contextsCommand = async (v: Values, io: Io): Promise<number> =>
  withLog(locate(v, "contexts"), { create: false, readOnly: true }, async ({ store, projections, holder }) => {
    // A run whose process is gone shows as interrupted (read only: a writing command records it).
    const truth = await runTruth(locate(v, "contexts"), holder ? null : store.sql);
    const views = await projections.contexts.list();
    const tasks = new Map<string, string | null>();
    for (const view of views) if (view.kind === "root") tasks.set(view.id, await firstMessage(store, view.id));
    const needle = v.grep?.toLowerCase();
    const rows: ContextRow[] = [];
    for (const view of views) {
      const shown = truth.shown(view);
      if (v.status && shown !== v.status) continue;
      if (needle !== undefined && !(tasks.get(view.rootContextId) ?? "").toLowerCase().includes(needle)) continue;
      rows.push({
        ...view,
        shownStatus: shown,
        usage: await projections.usage.of(view.id),
        task: tasks.get(view.id) ?? null,
      });
    }
    if (v.json) {
      io.print(JSON.stringify(rows));
      return EXIT.ok;
    }
    if (rows.length === 0) {
      const filters = [
        v.status ? `${v.status}` : "",
        v.grep ? `under a root whose task contains ${JSON.stringify(v.grep)}` : "",
      ];
      io.print(
        v.status || v.grep
          ? `no ${filters[0] ? `${filters[0]} ` : ""}contexts${filters[1] ? ` ${filters[1]}` : ""}`
          : `no contexts yet: start one with actorzero run "<task>"`,
      );
      return EXIT.ok;
    }
    const p = io.paint;
    const width = screenWidth(io.out);
    io.print(
      fitTable(
        ["CONTEXT", "AGENT", "PROFILE", "NAME", "STATUS", "PARENT", "TOKENS", "UPDATED", "TASK"],
        rows.map((r) => [
          r.id.slice(0, 8),
          `A${r.agentNumber}`,
          r.profile,
          r.name.length > 32 ? `${r.name.slice(0, 31)}…` : r.name,
          paintStatus(r.shownStatus, p) + statusNote(r, p),
          r.parentContextId ? r.parentContextId.slice(0, 8) : p.dim("–"),
          count((r.usage?.inputTokens ?? 0) + (r.usage?.outputTokens ?? 0)),
          p.dim(timestamp(r.updatedAt)),
          r.kind === "root" ? shortTask(r.task, 40) : "",
        ]),
        { width, steps: NARROWER, style: p.dim },
      ),
    );
    // A run parked on its tree's budget waits for a person: say so, and how to let it go on.
    for (const r of rows) {
      if (r.status !== "running" || !r.parkedOnBudget) continue;
      io.print(
        wrapText(
          p.yellow(
            `A${r.agentNumber} ${r.id.slice(0, 8)} is parked: its next model call would pass its tree's ${r.parkedOnBudget.limit} budget; `,
          ) +
            `let it go on with ${extendHint(r.rootContextId, r.parkedOnBudget.limit)} (any amount), or stop it with actorzero stop ${r.id.slice(0, 8)}`,
          width,
          "  ",
        ),
      );
    }
    io.print(
      wrapText(
        p.dim(
          `${rows.length} context${rows.length === 1 ? "" : "s"}; see one with actorzero audit <id> or actorzero tree <id>`,
        ),
        width,
        "",
      ),
    );
    return EXIT.ok;
  });
