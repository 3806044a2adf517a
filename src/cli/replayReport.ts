// The side-by-side report of `replay-run`, 80 columns: per context, the recorded run and the replay in two columns.
import type { ContextComparison, RunComparison, RunSide } from "../fixtures/runComparison.ts";

const LABEL = 12;
const COLUMN = 32;
/** The report's width: a label and two columns with a rule between them. */
export const WIDTH = LABEL + COLUMN * 2 + 3;
/** Lines of an answer shown per side; the rest is cut with a count. */
const ANSWER_LINES = 4;

/** `text` cut into lines of at most `width` characters (words kept whole where they fit). */
export const wrap = (text: string, width: number): string[] => {
  const out: string[] = [];
  for (const para of text.split("\n")) {
    let line = "";
    for (const word of para.split(/\s+/).filter(Boolean)) {
      for (let w = word; w.length > 0;) {
        const room = width - (line ? line.length + 1 : 0);
        if (w.length <= room) {
          line = line ? `${line} ${w}` : w;
          w = "";
        } else if (line) {
          out.push(line);
          line = "";
        } else {
          out.push(w.slice(0, width));
          w = w.slice(width);
        }
      }
    }
    out.push(line);
  }
  return out;
};

const cell = (lines: string[], i: number) => (lines[i] ?? "").padEnd(COLUMN);

/** One row: a label and the two sides, each wrapped to its column; `*` marks a row whose sides differ. */
const row = (label: string, left: string, right: string, maxLines = Infinity): string[] => {
  const cut = (s: string) => {
    const lines = wrap(s, COLUMN);
    return lines.length > maxLines
      ? [...lines.slice(0, maxLines - 1), `… (${lines.length - maxLines + 1} more lines)`]
      : lines;
  };
  const a = cut(left);
  const b = cut(right);
  const mark = left === right ? " " : "*";
  return Array.from({ length: Math.max(a.length, b.length) }, (_, i) =>
    `${(i === 0 ? label : "").padEnd(LABEL - 1)}${i === 0 ? mark : " "}${cell(a, i)} │ ${cell(b, i)}`.trimEnd(),
  );
};

const side = (s: RunSide | null, pick: (s: RunSide) => string) => (s ? pick(s) : "(no such context)");

const contextRows = (c: ContextComparison): string[] => [
  c.path,
  ...row(
    "tool calls",
    side(c.recorded, (s) => s.toolCalls.join(" → ") || "(none)"),
    side(c.replay, (s) => s.toolCalls.join(" → ") || "(none)"),
  ),
  ...row(
    "delegates",
    side(c.recorded, (s) => s.delegations.join(", ") || "(none)"),
    side(c.replay, (s) => s.delegations.join(", ") || "(none)"),
  ),
  ...row(
    "answer",
    side(c.recorded, (s) => s.answers.map((a) => a ?? "(no answer)").join("\n") || "(none)"),
    side(c.replay, (s) => s.answers.map((a) => a ?? "(no answer)").join("\n") || "(none)"),
    ANSWER_LINES,
  ),
  ...row(
    "tokens",
    side(c.recorded, (s) => `${s.tokens.input} in / ${s.tokens.output} out`),
    side(c.replay, (s) => `${s.tokens.input} in / ${s.tokens.output} out`),
  ),
];

/** The whole report: a header, each context's rows, and where the two runs first differ. */
export const replayReport = (comparison: RunComparison, header: { recorded: string; replay: string }): string[] => {
  const lines = [
    `${"".padEnd(LABEL)}${header.recorded.slice(0, COLUMN).padEnd(COLUMN)} │ ${header.replay.slice(0, COLUMN)}`,
    "─".repeat(WIDTH),
  ];
  for (const c of comparison.contexts) lines.push(...contextRows(c), "");
  const d = comparison.firstDifference;
  if (!d) lines.push("The replay does what the recorded run did: same tool calls, delegations, answers and tokens.");
  else {
    const what = {
      context: "the context",
      toolCalls: "the tool calls",
      delegations: "the delegations",
      answers: "the answer",
      tokens: "the tokens",
    }[d.field];
    lines.push(
      ...wrap(
        `First difference: ${d.path}, ${what}: recorded ${firstLine(d.recorded)}; replay ${firstLine(d.replay)}`,
        WIDTH,
      ),
    );
  }
  return lines;
};

const firstLine = (s: string) => {
  const line = s.split("\n")[0]!;
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
};
