// `actorzero approvals [<id>]`: the tool calls waiting for a person's decision, in the whole log or under one context.
import { pendingApprovals, type ApprovalView } from "../../projections/approvals.ts";
import { subtreeIds } from "../../projections/auditLoad.ts";
import { resolveContext, withLog, type Io } from "../context.ts";
import { EXIT } from "../errors.ts";
import { defineCommand, booleanFlag, JSON_FLAG, STORE_FLAGS, type ValuesOf } from "../defineCommand.ts";
import type { FitStep } from "../fitColumns.ts";
import { compactJson, oneLine, timestamp } from "../format.ts";
import { fitTable, screenWidth, wrapText } from "../screen.ts";
import { locate } from "../openLog.ts";

export const approvalsSpec = defineCommand({
  name: "approvals",
  summary: "List the tool calls waiting for a decision (whole log, or the tree under a context).",
  usage: ["approvals [<id>] [--all] [--json]"],
  args: [{ name: "<id>", optional: true, id: true }],
  flags: {
    ...STORE_FLAGS,
    all: booleanFlag("also the decided ones (granted, denied) and the ones closed when their run ended"),
    ...JSON_FLAG,
  },
  details: `With <id>, only the approvals of that context and the contexts below it.
--json prints an array of { approvalId, contextId, runId, toolCallId, tool, arguments, agentNumber, status,
requestedAt, expiresAt, decidedAt, by, note, reason, closedBy } in the order they were requested.`,
});
type Values = ValuesOf<typeof approvalsSpec>;

export const approvalsCommand = async (v: Values, io: Io): Promise<number> => {
  const where = locate(v, "approvals");
  return withLog(where, { create: false, readOnly: true }, async ({ projections }) => {
    const arg = v.positionals["<id>"];
    const scope =
      arg === undefined ? undefined : await subtreeIds(projections, (await resolveContext(projections, arg, where)).id);
    const states = await projections.approvals.of(scope);
    const rows: ApprovalView[] = v.all
      ? states.flatMap((s) => s.approvals).sort((a, b) => a.requestedPosition - b.requestedPosition)
      : pendingApprovals(states);
    if (v.json) {
      io.print(JSON.stringify(rows.map(({ requestedPosition: _, ...row }) => row)));
      return EXIT.ok;
    }
    if (rows.length === 0) {
      io.print(`no ${v.all ? "" : "pending "}approvals${arg === undefined ? "" : ` under ${arg}`}`);
      return EXIT.ok;
    }
    const p = io.paint;
    const width = screenWidth(io.out);
    io.print(
      fitTable(
        ["APPROVAL", "CONTEXT", "AGENT", "TOOL", "ARGUMENTS", "STATUS", "REQUESTED"],
        rows.map((a) => [
          a.approvalId,
          a.contextId.slice(0, 8),
          `A${a.agentNumber}`,
          a.tool,
          oneLine(compactJson(a.arguments), 48),
          a.status === "pending" ? p.cyan("awaiting approval") : statusOf(a),
          p.dim(timestamp(a.requestedAt)),
        ]),
        { width, steps: NARROWER, style: p.dim, clip: [0] },
      ),
    );
    const pending = rows.filter((a) => a.status === "pending").length;
    if (pending > 0) {
      io.print(
        wrapText(
          p.dim(
            `decide with actorzero approve <approval> [--note <text>] or actorzero reject <approval> --reason <text> (a unique prefix of the id will do)`,
          ),
          width,
          "  ",
        ),
      );
    }
    return EXIT.ok;
  });
};

// On a narrow terminal the approval id shrinks to a prefix (approve and reject take one), the arguments shrink
// and the request time and the context go.
const NARROWER: FitStep[] = [
  { shrink: 0, to: 8 },
  { shrink: 4, to: 20 },
  { drop: 6 },
  { drop: 1 },
  { shrink: 3, to: 10 },
  { shrink: 4, to: 10 },
];

const statusOf = (a: ApprovalView): string =>
  a.status === "closed"
    ? `closed (run ${a.closedBy})`
    : `${a.status} by ${a.by}${a.status === "denied" && a.reason ? `: ${oneLine(a.reason, 40)}` : ""}`;
