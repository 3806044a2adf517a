// Output laid out to the terminal it goes to: tables that fit its width, text wrapped between words.
//
// Requirements:
// - On a terminal, no line is wider than it (a line the terminal wraps breaks words and columns apart);
//   what matters most stays whole, the rest gives way (see fitColumns) and a cut is marked with "…".
// - Output to a pipe or a file is never cut or wrapped: scripts and logs get every character.
// - Text wraps at spaces, continuation lines indented under the line's first word; only a word wider than
//   the whole line is broken.
import { cutVisible, visibleLength } from "./ansi.ts";
import { fitColumns, type FitStep } from "./fitColumns.ts";

/** The columns `out` shows: the terminal's width, or Infinity when it is not a terminal. */
export const screenWidth = (out: Pick<NodeJS.WriteStream, "isTTY" | "columns">): number =>
  out.isTTY ? out.columns || Number(process.env["COLUMNS"]) || 80 : Infinity;

const GAP = 2;

/** Where an event line's continuation starts on a narrow terminal: under its time. */
export const EVENT_INDENT = " ".repeat(7);

/**
 * Left-aligned columns like `table`, fitted into `width`: `steps` say which columns shrink or go first;
 * a line still too wide is cut at the end. Cells may carry colour escapes.
 */
export const fitTable = (
  header: string[],
  rows: string[][],
  opts: {
    width: number;
    steps: readonly FitStep[];
    style?: (h: string) => string;
    /** Columns cut without a mark: ids, whose prefix is itself an id the commands accept. */
    clip?: readonly number[];
  },
): string => {
  const natural = header.map((h, i) => Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i] ?? ""))));
  const widths = Number.isFinite(opts.width) ? fitColumns(natural, opts.width, GAP, opts.steps) : natural;
  const shown = widths.flatMap((w, i) => (w === null ? [] : [i]));
  const line = (cells: string[]) =>
    shown
      .map((i, k) => {
        const text = cells[i] ?? "";
        const cell =
          opts.clip?.includes(i) && visibleLength(text) > widths[i]!
            ? [...text].slice(0, widths[i]!).join("")
            : cutVisible(text, widths[i]!);
        return k === shown.length - 1 ? cell : cell + " ".repeat(widths[i]! - visibleLength(cell));
      })
      .join(" ".repeat(GAP))
      .trimEnd();
  const fit = (l: string) => (Number.isFinite(opts.width) ? cutVisible(l, opts.width) : l);
  return [(opts.style ?? ((h) => h))(fit(line(header))), ...rows.map((r) => fit(line(r)))].join("\n");
};

/**
 * `text` wrapped to `width` between words; each line of it on its own, its continuation lines indented by
 * `indent` (default: the line's own indentation and two more spaces).
 */
export const wrapText = (text: string, width: number, indent?: string): string => {
  if (!Number.isFinite(width)) return text;
  return text
    .split("\n")
    .flatMap((l) => wrapLine(l, width, indent ?? `${/^ */.exec(l)![0]}  `))
    .join("\n");
};

const wrapLine = (line: string, width: number, indent: string): string[] => {
  if (visibleLength(line) <= width) return [line];
  const lead = /^ */.exec(line)![0];
  // Words and the spaces between them as they were (columns stay aligned on the first line).
  const parts = line.slice(lead.length).split(/( +)/);
  const out: string[] = [];
  let current = lead;
  let empty = true;
  for (let i = 0; i < parts.length; i += 2) {
    let word = parts[i]!;
    const space = i === 0 ? "" : parts[i - 1]!;
    for (;;) {
      const sep = empty ? "" : space;
      if (visibleLength(current) + sep.length + visibleLength(word) <= width) {
        current += sep + word;
        empty = false;
        break;
      }
      if (!empty) {
        out.push(current);
        current = indent;
        empty = true;
        continue;
      }
      // A word wider than a whole line (JSON, a path): broken after punctuation if it has some, else where the line ends.
      const room = Math.max(1, width - visibleLength(current));
      const [head, tail] = splitVisible(word, room);
      const punct = Math.max(
        head.lastIndexOf(","),
        head.lastIndexOf(":"),
        head.lastIndexOf("/"),
        head.lastIndexOf(";"),
      );
      const at = punct > head.length / 2 ? punct + 1 : head.length;
      out.push(current + head.slice(0, at));
      current = indent;
      word = head.slice(at) + tail;
      if (word === "") break;
    }
  }
  if (!empty) out.push(current);
  return out;
};

/** `s` split after `n` visible characters, escapes kept with the characters they precede. */
const splitVisible = (s: string, n: number): [string, string] => {
  let seen = 0;
  let i = 0;
  while (i < s.length && seen < n) {
    const esc = /^\x1b\[[0-9;?]*[A-Za-z]/.exec(s.slice(i));
    if (esc) {
      i += esc[0].length;
      continue;
    }
    i += String.fromCodePoint(s.codePointAt(i)!).length;
    seen++;
  }
  return [s.slice(0, i), s.slice(i)];
};
