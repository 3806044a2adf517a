// The audit as text: a summary tree, then each context's runs step by step, children after their parent.
import type { Paint } from "./ansi.ts";
import type {
  AuditReport,
  ContextAudit,
  Entry,
  JobAudit,
  RunAudit,
  SubordinateLink,
} from "../projections/auditReport.ts";
import { clock, compactJson, count, cut, duration, oneLine, tokens } from "./format.ts";
import { figuresOf, plural, timesLine, treeRuns } from "./runFigures.ts";
import { paintStatus } from "./status.ts";
import { treeTable, type TreeNode } from "./treeTable.ts";
import { budgetLine } from "./budgetText.ts";

export type TextOptions = {
  /** Texts longer than this are cut (Infinity with --full). */
  max: number;
  paint: Paint;
  /** Where a fork came from (its ContextCreated says): shown with its identity, at the top. */
  forkedFrom?: { contextId: string; position: number };
};

const lastStatus = (c: ContextAudit): string => {
  const last = c.runs.at(-1);
  if (!last) return "idle";
  return last.status;
};

const toTree = (c: ContextAudit): TreeNode<ContextAudit> => ({ value: c, children: c.children.map(toTree) });

/** One row per context: who, how its last run ended, its time and tokens. */
export const summaryTree = (report: AuditReport, paint: Paint): string =>
  treeTable(
    [toTree(report.context)],
    ["AGENT", "PROFILE", "NAME", "STATUS", "RUNS", "TIME", "TOKENS", "CONTEXT"],
    (c) => [
      paint.bold(`A${c.agentNumber}`),
      c.profile,
      c.name.length > 28 ? `${c.name.slice(0, 27)}…` : c.name,
      paintStatus(lastStatus(c), paint),
      String(c.runs.length),
      duration(c.runs.at(-1)?.durationMs ?? null),
      count(c.own.inputTokens + c.own.outputTokens),
      paint.dim(c.id.slice(0, 8)),
    ],
    paint,
  );

const totalsLine = (c: ContextAudit): string => {
  const t = c.tree;
  const parts = [
    plural(t.contexts, "context"),
    plural(t.runs, "run"),
    plural(t.modelCalls, "model call"),
    plural(t.toolCalls, "tool call"),
    `tokens ${tokens(t.inputTokens, t.outputTokens)}`,
    timesLine(figuresOf(treeRuns(c))),
  ];
  if (t.stops) parts.push(`${t.stops} stopped`);
  if (t.failures) parts.push(`${t.failures} failed`);
  if (t.interruptions) parts.push(`${t.interruptions} interrupted`);
  return parts.join(" · ");
};

/** The whole audit as text. */
export const auditText = (report: AuditReport, o: TextOptions): string => {
  const p = o.paint;
  const out: string[] = [];
  const root = report.context;
  out.push(p.bold(`Audit of A${root.agentNumber} ${root.profile} “${root.name}” (${root.id})`));
  const from = o.forkedFrom;
  if (from)
    out.push(
      `forked from ${from.contextId} at log position ${from.position} (actorzero audit ${from.contextId.slice(0, 8)})`,
    );
  out.push(`${totalsLine(root)} · log position ${report.position}`);
  if (report.budget !== undefined)
    out.push(
      `${budgetLine(report.budget, p)}${report.budget && report.budget.rootContextId !== root.id ? ` (of its tree, root ${report.budget.rootContextId.slice(0, 8)})` : ""}`,
    );
  out.push("");
  out.push(summaryTree(report, p));
  const walk = (c: ContextAudit) => {
    out.push("");
    out.push(...contextBlock(c, o));
    for (const child of c.children) walk(child);
  };
  walk(root);
  return out.join("\n") + "\n";
};

const text = (s: string | null, o: TextOptions, indent: string): string => {
  if (s === null) return "–";
  if (!Number.isFinite(o.max))
    return s.includes("\n")
      ? `\n${s
          .split("\n")
          .map((l) => indent + l)
          .join("\n")}`
      : s;
  return JSON.stringify(oneLine(s, o.max));
};

const args = (v: unknown, o: TextOptions) => cut(compactJson(v), o.max);

const contextBlock = (c: ContextAudit, o: TextOptions): string[] => {
  const p = o.paint;
  const lines: string[] = [];
  const parent = c.parentContextId
    ? ` · child of ${c.parentContextId.slice(0, 8)}${c.slot ? ` (slot ${c.slot})` : ""}`
    : " · root";
  lines.push(p.bold(`A${c.agentNumber} ${c.profile} “${c.name}”`) + p.dim(`  ${c.id}`));
  lines.push(
    `  ${paintStatus(lastStatus(c), p)}${c.paused ? p.yellow(" (paused)") : ""}${parent}${c.project ? ` · project ${c.project}` : ""} · created ${c.createdAt}`,
  );
  lines.push(
    `  own: ${plural(c.own.modelCalls, "model call")}, ${plural(c.own.toolCalls, "tool call")}, tokens ${tokens(c.own.inputTokens, c.own.outputTokens)}`,
  );
  if (c.children.length > 0) lines.push(`  with everything below: ${totalsLine(c)}`);
  c.runs.forEach((run, i) => lines.push(...runBlock(run, i + 1, o)));
  if (c.runs.length === 0) lines.push(p.dim("  (no runs)"));
  return lines;
};

const runBlock = (run: RunAudit, n: number, o: TextOptions): string[] => {
  const p = o.paint;
  const who =
    run.requestedBy.kind === "user"
      ? "the user"
      : `its superior ${run.requestedBy.contextId.slice(0, 8)}${run.requestedBy.jobId ? ` (job ${run.requestedBy.jobId})` : ""}`;
  const lines = [
    "",
    `  ${p.bold(`run ${n}`)} ${p.dim(run.runId.slice(0, 8))}  ${paintStatus(run.status === "running" ? "running (no end recorded)" : run.status, p)}  ${duration(run.durationMs)}  asked by ${who} · model ${run.model} · tokens ${tokens(run.usage.inputTokens, run.usage.outputTokens)}`,
  ];
  const pad = "      ";
  for (const e of run.entries) lines.push(...entryLines(e, o, pad));
  if (run.status === "completed") lines.push(`    ${p.green("answer")} ${text(run.response, o, pad)}`);
  if (run.status === "stopped")
    lines.push(`    ${p.yellow("stopped")} by ${run.stoppedBy === "user" ? "the user" : "its superior"}`);
  if (run.status === "failed")
    lines.push(`    ${p.red("failed")} (${run.failure?.reason}): ${text(run.failure?.message ?? null, o, pad)}`);
  if (run.status === "interrupted") lines.push(`    ${p.yellow("interrupted")}: ${run.failure?.message}`);
  if (run.status === "running")
    lines.push(`    ${p.cyan("no end recorded")}: still running, or cut short by a crash not yet recorded`);
  return lines;
};

const at = (e: { at: string; position: number }, p: Paint) => p.dim(`${clock(e.at)} #${e.position}`);

const link = (l: SubordinateLink | null, jobContext: string | null, p: Paint): string => {
  const id = l?.contextId ?? jobContext;
  if (!id) return "";
  const who = `${l?.agentNumber !== null && l?.agentNumber !== undefined ? `A${l.agentNumber} ` : ""}${id.slice(0, 8)}`;
  return ` → ${l?.fresh === false ? "continued " : ""}${who}${l?.outcome ? ` ${paintStatus(l.outcome, p)}` : ""}`;
};

const jobLine = (j: JobAudit, o: TextOptions, pad: string): string => {
  const p = o.paint;
  const detail = j.status === "success" ? "" : j.error ? `: ${text(j.error, o, pad)}` : "";
  return `${pad}  job ${j.jobId} ${j.toolName} ${args(j.arguments, o)}${link(j.subordinate ? { ...j.subordinate, outcome: null } : null, j.contextId, p)} · ${paintStatus(j.status, p)}${detail}`;
};

const entryLines = (e: Entry, o: TextOptions, pad: string): string[] => {
  const p = o.paint;
  switch (e.kind) {
    case "message":
      return [
        `    ${at(e, p)} ${p.bold(e.sender === "user" ? (e.via ? `user over ${e.via.toUpperCase()}` : "user") : "superior")}: ${text(e.text, o, pad)}`,
      ];
    case "intervention":
      return [`    ${at(e, p)} ${p.bold("intervention")}: ${text(e.text, o, pad)}`];
    case "warning":
      return [`    ${at(e, p)} ${p.yellow("warning")} (step ${e.step}): ${text(e.text, o, pad)}`];
    case "paused":
    case "resumed":
      return [`    ${at(e, p)} ${p.yellow(e.kind)}`];
    case "remote_task":
      return [
        `    ${at(e, p)} ${p.bold("remote task")} ${e.taskId ?? p.cyan("(not taken yet)")} at ${e.url}${e.skill ? ` (skill ${e.skill})` : ""}${e.state ? ` ${p.dim(e.state)}` : ""}`,
      ];
    case "model_call": {
      const again = e.madeAgain
        ? ` ${p.yellow("made again after a restart (the cut-off call may be billed too)")}`
        : "";
      const head = `    ${at(e, p)} ${p.bold(`model`)} step ${e.step}${e.attempt > 1 ? ` attempt ${e.attempt}` : ""}${again} ${p.dim(`(${duration(e.durationMs)}${e.usage ? `, ${tokens(e.usage.inputTokens, e.usage.outputTokens)}` : ""})`)}`;
      if (e.outcome === "failed")
        return [
          `${head} ${p.red("failed")} ${e.error?.reason}${e.error?.retryable ? " (retryable)" : ""}: ${text(e.error?.message ?? null, o, pad)}`,
        ];
      if (e.outcome === "pending") return [`${head} ${p.cyan("no reply recorded")}`];
      const calls = e.toolCalls.map((c) => c.name).join(", ");
      const lines = [`${head} → ${calls ? `calls ${calls}` : "text"}`];
      if (e.text) lines.push(`${pad}says ${text(e.text, o, pad)}`);
      return lines;
    }
    case "compaction": {
      const what = `${e.topics} topic(s) summarised, ${e.elided} tool result(s) elided, ${e.tokensBefore} → ${e.tokensAfter} tokens`;
      const why =
        e.trigger === "endpoint" ? "the endpoint refused the request as too long" : "the request neared the window";
      const head = `    ${at(e, p)} ${p.bold("compaction")} step ${e.step} ${p.dim(`(${duration(e.durationMs)}${e.usage ? `, ${tokens(e.usage.inputTokens, e.usage.outputTokens)}` : ""})`)} ${what} (${why})`;
      return [head, `${pad}summary ${text(e.summary, o, pad)}`];
    }
    case "tool_call": {
      // The answer of `response` is shown as the run's answer; a parallel call's result repeats its jobs.
      const quiet =
        e.outcome === "returned" &&
        (e.name === "response" || (e.name === "parallel" && e.jobs.length > 0)) &&
        Number.isFinite(o.max);
      const shownArgs = quiet && e.name === "response" ? "" : ` ${args(e.arguments, o)}`;
      const head = `    ${at(e, p)} ${p.bold("tool")} ${e.name}${shownArgs} ${p.dim(`(${duration(e.durationMs)})`)}${link(e.subordinate, null, p)}`;
      const lines = [head, ...e.jobs.map((j) => jobLine(j, o, pad))];
      if (e.outcome === "returned" && !quiet) lines.push(`${pad}⇒ ${text(e.result, o, pad)}`);
      if (e.outcome === "failed")
        lines.push(
          `${pad}${p.red("⇒ error")}${e.repairable ? " (returned to the model)" : ""}: ${text(e.error, o, pad)}`,
        );
      if (e.outcome === "pending") lines.push(`${pad}${p.cyan("⇒ no result recorded")}`);
      return lines;
    }
    default: {
      const _exhaustive: never = e;
      return [];
    }
  }
};
