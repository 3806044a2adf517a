// What `run` and `send` print when the run is over: the outcome, the answer, the audit tree, and where to look next.
import type { SendResult } from "../runtime/runtime.ts";
import { EXIT } from "./errors.ts";
import type { AuditReport } from "../projections/auditReport.ts";
import { summaryTree } from "./auditText.ts";
import type { Io } from "./context.ts";
import { duration } from "./format.ts";
import { countsLine, figuresOf, plural, treeRuns, type TreeRun } from "./runFigures.ts";
import { locationFlags, type LogLocation } from "./openLog.ts";
import { screenWidth, wrapText } from "./screen.ts";
import { paintStatus } from "./status.ts";

export type RunJson = {
  contextId: string;
  runId: string;
  status: SendResult["status"];
  response: string | null;
  failure: SendResult["failure"];
  audit: AuditReport;
};

/**
 * `after`: the log position before the command appended anything; the runs that start after it are this
 * run's (the root's run and the subordinate runs it caused), the rest are the tree's earlier life.
 */
export const printRunReport = (
  io: Io,
  result: SendResult,
  audit: AuditReport,
  where: LogLocation,
  command: string,
  after: number,
): void => {
  const p = io.paint;
  const root = audit.context;
  const run = root.runs.find((r) => r.runId === result.runId);
  const all = treeRuns(root);
  const mine = all.filter((r) => r.run.positions.first > after);
  const figures = figuresOf(mine);
  const width = screenWidth(io.out);
  const say = (line: string, indent = "") => io.print(wrapText(line, width, indent));
  io.print("");
  say(`${paintStatus(result.status, p)} in ${duration(run?.durationMs ?? null)} · this run: ${countsLine(figures)}`);
  if (mine.length < all.length)
    say(p.dim(`tree totals, every run so far: ${plural(all.length, "run")} · ${countsLine(root.tree)}`));
  if (result.status === "completed") {
    io.print("");
    io.print(p.bold("Answer"));
    say((result.response ?? "").replace(/^/gm, "  "), "  ");
  } else if (result.status === "stopped") {
    say(p.yellow(stoppedLine(mine)));
  } else if (result.failure) {
    say(p.red(`Failed (${result.failure.reason}): ${result.failure.message}`));
  }
  io.print("");
  io.print(p.bold("Tree"));
  io.print(summaryTree(audit, p));
  io.print("");
  if (where.kind === "memory") {
    say(p.dim("The log was in memory and is gone now; use --data-dir (or the default ./.actorzero) to keep it."));
    return;
  }
  const flags = locationFlags(where);
  const id = audit.context.id.slice(0, 8);
  const cmds: [string, string][] = [
    [`${command} audit ${id}${flags}`, "the full story: messages, model and tool calls, children"],
    [`${command} events --context ${id}${flags}`, "the raw log of this context"],
    [`${command} tree${flags}`, "every tree in the log"],
    [`${command} replay --verify${flags}`, "rebuild the projections from the log and compare"],
    [`${command} send ${id} "<message>"${flags}`, "continue the conversation"],
  ];
  const w = Math.max(...cmds.map(([c]) => c.length));
  io.print(p.bold("Look further"));
  // Side by side when they fit; on a narrow terminal each command goes under what it does.
  const sideBySide = w + Math.max(...cmds.map(([, what]) => what.length)) + 4 <= width;
  for (const [c, what] of cmds) {
    if (sideBySide) io.print(`  ${c.padEnd(w)}  ${p.dim(what)}`);
    else io.print(`  ${p.dim(what)}\n${wrapText(`    ${c}`, width, "      ")}`);
  }
};

/** What a stop stopped, and which runs of this run had already ended by then. */
export const stoppedLine = (mine: readonly TreeRun[]): string => {
  const who = (r: TreeRun) => `A${r.context.agentNumber} ${r.context.profile} ${r.context.id.slice(0, 8)}`;
  const stopped = mine.filter((r) => r.run.status === "stopped").map(who);
  const ended = mine
    .filter((r) => r.run.status !== "stopped" && r.run.status !== "running")
    .map((r) => `${who(r)} (${r.run.status})`);
  const parts = [`Stopped: ${stopped.length > 0 ? stopped.join(", ") : "no run"} (recorded as stopped)`];
  if (ended.length > 0) parts.push(`already ended before the stop: ${ended.join(", ")}`);
  return `${parts.join("; ")}. Send a message to continue.`;
};

/**
 * The end of `run` and `send`: the audit of the context's tree, printed (or as RunJson with --json, none
 * with --json --events, whose lines were the output), and the exit code the outcome calls for.
 */
export const reportSession = async (o: {
  io: Io;
  audit: AuditReport;
  contextId: string;
  session: { result: SendResult; interrupted: boolean; after: number };
  flags: { json?: boolean | undefined; events?: boolean | undefined };
  where: LogLocation;
  command: string;
}): Promise<number> => {
  const { result, interrupted } = o.session;
  const { audit } = o;
  if (o.flags.json && !o.flags.events) {
    const out: RunJson = {
      contextId: o.contextId,
      runId: result.runId,
      status: result.status,
      response: result.response,
      failure: result.failure,
      audit,
    };
    o.io.print(JSON.stringify(out));
  } else if (!o.flags.json) {
    printRunReport(o.io, result, audit, o.where, o.command, o.session.after);
  }
  if (result.status === "completed") return EXIT.ok;
  return interrupted && result.status === "stopped" ? EXIT.interrupted : EXIT.failed;
};
