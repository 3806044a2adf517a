// The live tree on a terminal: one row per context of the run's tree, redrawn in place with ANSI escapes.
import { ESC, cutVisible, type Paint } from "./ansi.ts";
import { duration, count } from "./format.ts";
import type { LiveNode, LiveState } from "./liveState.ts";
import { paintStatus } from "./status.ts";
import { treeOf, treeTable } from "./treeTable.ts";

const HEADER = ["AGENT", "PROFILE", "NAME", "STATUS", "STEP", "NOW", "ELAPSED", "TOKENS", "CONTEXT"];

/** The rows of the tree under `rootId` as they are now. */
export const liveRows = (state: LiveState, rootId: string, paint: Paint, now: number): string => {
  const inTree = new Set<string>([rootId]);
  for (const id of state.order) {
    const n = state.nodes.get(id)!;
    if (n.parentId && inTree.has(n.parentId)) inTree.add(id);
  }
  const nodes = state.order.filter((id) => inTree.has(id)).map((id) => state.nodes.get(id)!);
  const roots = treeOf(nodes, (n) => n.id, (n) => (n.id === rootId ? null : n.parentId));
  const cells = (n: LiveNode) => [
    paint.bold(`A${n.agentNumber}`),
    n.profile,
    n.name.length > 24 ? `${n.name.slice(0, 23)}…` : n.name,
    paintStatus(n.status, paint) + (n.paused ? paint.yellow(" (paused)") : ""),
    n.step > 0 ? String(n.step) : "–",
    paint.dim(n.activity.length > 40 ? `${n.activity.slice(0, 39)}…` : n.activity),
    duration(n.startedAt === null ? null : (n.endedAt ?? now) - n.startedAt),
    count(n.inputTokens + n.outputTokens),
    paint.dim(n.id.slice(0, 8)),
  ];
  return treeTable(roots, HEADER, cells, paint);
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
    const lines = liveRows(this.state, this.rootId, this.paint, Date.now()).split("\n");
    if (this.#footer) lines.push(this.paint.dim(this.#footer));
    let frame = this.#drawn > 0 ? ESC.up(this.#drawn) : "";
    for (const line of lines) frame += ESC.clearLine + cutVisible(line, width) + "\n";
    frame += ESC.clearDown;
    this.out.write(frame);
    this.#drawn = lines.length;
  }
}
