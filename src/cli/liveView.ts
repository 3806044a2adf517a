// The live tree on a terminal: one row per context of the run's tree, redrawn in place with ANSI escapes.
import { extendHint } from "./budgetText.ts";
import { ESC, cutVisible, visibleLength, type Paint } from "./ansi.ts";
import { ellipsis, fitColumns, type FitStep } from "./fitColumns.ts";
import { duration, count } from "./format.ts";
import type { LiveNode, LiveState } from "./liveState.ts";
import { wrapText } from "./screen.ts";
import { paintStatus } from "./status.ts";
import { flatten, treeOf } from "./treeTable.ts";

type Column = { header: string; text: (n: LiveNode, now: number) => string };

const COLUMNS: Column[] = [
  { header: "AGENT", text: (n) => `A${n.agentNumber}` },
  { header: "PROFILE", text: (n) => n.profile },
  { header: "NAME", text: (n) => n.name },
  { header: "STATUS", text: (n) => n.status + noteOf(n) },
  { header: "STEP", text: (n) => (n.step > 0 ? String(n.step) : "–") },
  { header: "NOW", text: (n) => n.activity },
  { header: "ELAPSED", text: (n, now) => duration(n.startedAt === null ? null : (n.endedAt ?? now) - n.startedAt) },
  { header: "TOKENS", text: (n) => count(n.inputTokens + n.outputTokens) },
  { header: "CONTEXT", text: (n) => n.id.slice(0, 8) },
];
/** What a running context waits on, as contexts says it: a decision before a pause, a pause before the queue. */
const noteOf = (n: LiveNode): string =>
  n.awaiting > 0
    ? " (awaiting approval)"
    : n.budgetParked
      ? " (parked: budget)"
      : n.paused
        ? " (paused)"
        : n.status === "running" && n.queued
          ? " (queued)"
          : "";

const at = (header: string): number => COLUMNS.findIndex((c) => c.header === header);
const AGENT = at("AGENT");

// At 80 columns the status, the elapsed time and the start of the name must show: the activity
// shrinks first, then the columns one can do without go, least needed first.
const NARROWER: FitStep[] = [
  { shrink: at("NOW"), to: 16 },
  { shrink: at("NAME"), to: 16 },
  { drop: at("CONTEXT") },
  { drop: at("NOW") },
  { drop: at("PROFILE") },
  { drop: at("STEP") },
  { drop: at("TOKENS") },
  { shrink: at("NAME"), to: 6 },
];
const GAP = 2;

/** The rows of the tree under `rootId` as they are now, laid out to fit `width` columns. */
export const liveRows = (state: LiveState, rootId: string, paint: Paint, now: number, width = Infinity): string => {
  const inTree = new Set<string>([rootId]);
  for (const id of state.order) {
    const n = state.nodes.get(id)!;
    if (n.parentId && inTree.has(n.parentId)) inTree.add(id);
  }
  const nodes = state.order.filter((id) => inTree.has(id)).map((id) => state.nodes.get(id)!);
  const rows = flatten(
    treeOf(
      nodes,
      (n) => n.id,
      (n) => (n.id === rootId ? null : n.parentId),
    ),
  ).map(({ value, branch }) => ({
    node: value,
    branch,
    texts: COLUMNS.map((c, i) => (i === AGENT ? branch : "") + c.text(value, now)),
  }));
  const natural = COLUMNS.map((c, i) =>
    Math.max(visibleLength(c.header), ...rows.map((r) => visibleLength(r.texts[i]!))),
  );
  const widths = fitColumns(natural, width, GAP, NARROWER);
  const shown = COLUMNS.flatMap((_, i) => (widths[i] === null ? [] : [i]));
  const line = (cells: string[]) => cells.join(" ".repeat(GAP)).trimEnd();
  const pad = (text: string, i: number, last: boolean) => {
    const cut = ellipsis(text, widths[i]!);
    return { cut, padding: last ? "" : " ".repeat(widths[i]! - visibleLength(cut)) };
  };
  const header = line(
    shown.map((i, k) => {
      const { cut, padding } = pad(COLUMNS[i]!.header, i, k === shown.length - 1);
      return cut + padding;
    }),
  );
  const body = rows.map(({ node, branch, texts }) =>
    line(
      shown.map((i, k) => {
        const { cut, padding } = pad(texts[i]!, i, k === shown.length - 1);
        return paintCell(i, cut, node, branch, paint) + padding;
      }),
    ),
  );
  const waiting = nodes.filter((n) => n.awaiting > 0);
  // Nothing moves until someone decides: say who waits for what, and where to decide.
  const hint =
    waiting.length === 0
      ? []
      : [
          wrapText(
            paint.yellow(
              `awaiting approval: ${waiting.map((n) => `A${n.agentNumber} ${n.name} (${[...new Set(n.awaitingTools)].join(", ") || "a tool call"})`).join(", ")}`,
            ),
            width,
            "  ",
          ),
          wrapText(
            paint.dim(
              "decide from another terminal: actorzero approvals, then actorzero approve <id> or reject <id> --reason <text>",
            ),
            width,
            "  ",
          ),
        ];
  const parked = nodes.filter((n) => n.budgetParked);
  // A tree out of budget waits for more: say which limit, and the command that gives it.
  const budgetHint =
    parked.length === 0
      ? []
      : [
          wrapText(
            paint.yellow(
              `parked on the tree's budget: ${parked.map((n) => `A${n.agentNumber} ${n.name} (${n.budgetParked!.limit})`).join(", ")}`,
            ),
            width,
            "  ",
          ),
          wrapText(
            paint.dim(
              `let it go on from another terminal: ${extendHint(parked[0]!.budgetParked!.rootId, parked[0]!.budgetParked!.limit)}, or stop it`,
            ),
            width,
            "  ",
          ),
        ];
  return [paint.dim(header), ...body, ...hint, ...budgetHint].join("\n");
};

/** Paints a cell already cut to its width (the escapes go around what is shown, never inside a cut). */
const paintCell = (column: number, cut: string, n: LiveNode, branch: string, paint: Paint): string => {
  switch (COLUMNS[column]!.header) {
    case "AGENT":
      return paint.dim(cut.slice(0, branch.length)) + paint.bold(cut.slice(branch.length));
    case "STATUS":
      return noteOf(n) !== "" && cut.endsWith(noteOf(n))
        ? paintStatus(cut.slice(0, -noteOf(n).length), paint) + paint.yellow(noteOf(n))
        : paintStatus(cut, paint);
    case "NOW":
    case "CONTEXT":
      return paint.dim(cut);
    default:
      return cut;
  }
};

export class LiveView {
  #drawn = 0;
  #timer: NodeJS.Timeout | null = null;
  #footer = "";

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly state: LiveState,
    private readonly rootId: string,
    private readonly paint: Paint,
  ) {}

  start(): void {
    this.out.write(ESC.hideCursor);
    this.draw();
    this.#timer = setInterval(() => this.draw(), 100);
  }

  footer(text: string): void {
    this.#footer = text;
    this.draw();
  }

  /** Draws the last state, keeping the footer (what Ctrl-C said), and gives the terminal back (cursor shown, below the tree). */
  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.draw();
    this.out.write(ESC.showCursor);
  }

  draw(): void {
    const width = Math.max(20, (this.out.columns || Number(process.env["COLUMNS"]) || 120) - 1);
    const lines = liveRows(this.state, this.rootId, this.paint, Date.now(), width).split("\n");
    if (this.#footer) lines.push(this.paint.dim(this.#footer));
    let frame = this.#drawn > 0 ? ESC.up(this.#drawn) : "";
    for (const line of lines) frame += ESC.clearLine + cutVisible(line, width) + "\n";
    frame += ESC.clearDown;
    this.out.write(frame);
    this.#drawn = lines.length;
  }
}
